package blogapp

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
)

// FuzzQuery reads GET /v2/blog query strings as the handler does. Properties:
// every text filter that is accepted is trimmed, non-empty, valid UTF-8
// without NUL (Postgres refuses NUL in text) and within its length; limit and
// offset stay within the spec's bounds; each refusal is one problem naming its
// parameter, so a bad value is never silently replaced.
func FuzzQuery(f *testing.F) {
	seeds := []string{"category=events&tag=berlin&limit=50&offset=0", "limit=51", "limit=0", "offset=-1",
		"limit=1e3", "limit=%2B5", "tag=%00", "tag=%ff", "slug=a&slug=b", "category=" + strings.Repeat("%C3%A9", 101),
		"tag=++", "limit=99999999999999999999", "offset=0x10", "slug=..%2F..%2Fetc"}
	webtest.FuzzQuery(f, "/v2/blog", seeds, func(t *testing.T, c *fiber.Ctx, raw string) {
		q := web.Params(c)
		texts := map[string]int{"slug": 200, "category": maxFilterLen, "tag": maxFilterLen}
		for name, max := range texts {
			before := len(q.Problems())
			v, given := q.NonEmptyText(name, max)
			if len(q.Problems()) > before {
				continue
			}
			if given && (v == "" || v != strings.TrimSpace(v) || !utf8.ValidString(v) || strings.ContainsRune(v, 0) ||
				utf8.RuneCountInString(v) > max) {
				t.Fatalf("%q: %s accepted as %q", raw, name, v)
			}
		}
		limit := q.Int("limit", postbus.DefaultLimit, 1, postbus.MaxLimit)
		offset := q.Int("offset", 0, 0, postbus.MaxOffset)
		if limit < 1 || limit > postbus.MaxLimit || offset < 0 || offset > postbus.MaxOffset {
			t.Fatalf("%q: limit %d offset %d", raw, limit, offset)
		}
		for _, p := range q.Problems() {
			name, _, _ := strings.Cut(p, " ")
			if _, ok := texts[name]; !ok && name != "limit" && name != "offset" {
				t.Fatalf("%q: problem %q names no parameter", raw, p)
			}
		}
		if l, ok := q.Raw("limit"); ok && len(q.Problems()) == 0 {
			if n, err := strconv.Atoi(l); err != nil || n != limit {
				t.Fatalf("%q: limit %q read as %d", raw, l, limit)
			}
		}
	})
}
