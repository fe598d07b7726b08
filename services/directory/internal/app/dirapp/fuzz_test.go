package dirapp

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
)

// FuzzTextParam reads the q and search parameters of GET /v2/cities and
// /v2/spaces as the handlers do. Properties: a value is either refused with a
// problem naming the parameter, or reaches the SQL layer as trimmed, valid
// UTF-8 of at most MaxTextLen characters with no control character; a
// repeated parameter is a problem, never a silent pick.
func FuzzTextParam(f *testing.F) {
	seeds := []string{"q=berlin", "search=z%C3%BCr", "q=%ff", "q=a%00b", "q=" + strings.Repeat("x", 201),
		"q=a&q=b", "search=%20%20zu%20%20", "q=%E2%80%AE", "q", "q=&search=", "search=%0d%0aSet-Cookie:x", "q=%zz"}
	webtest.FuzzQuery(f, "/v2/cities", seeds, func(t *testing.T, c *fiber.Ctx, query string) {
		for _, name := range []string{"q", "search"} {
			q := web.Params(c)
			v, _ := q.Text(name, MaxTextLen)
			if problems := q.Problems(); len(problems) > 0 {
				if v != "" || len(problems) != 1 || !strings.HasPrefix(problems[0], name+" ") {
					t.Fatalf("%q: %s = %q with problems %q", query, name, v, problems)
				}
				continue
			}
			if n := len(c.Context().QueryArgs().PeekMulti(name)); n > 1 {
				t.Fatalf("%q: %d values of %s accepted", query, n, name)
			}
			if !utf8.ValidString(v) || utf8.RuneCountInString(v) > MaxTextLen || v != strings.TrimSpace(v) ||
				strings.IndexFunc(v, unicode.IsControl) >= 0 {
				t.Fatalf("%q: %s accepted as %q", query, name, v)
			}
		}
	})
}
