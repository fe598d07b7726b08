package eventapp

import (
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
)

// FuzzFilter reads GET /v2/events query strings as the handler does.
// Properties: an accepted filter holds only a slug, a positive space id, a
// from strictly before to, and page bounds; a refused value is a problem and
// leaves its filter unset, never half-applied.
func FuzzFilter(f *testing.F) {
	seeds := []string{"city=berlin&space=2&from=2026-01-01&to=2026-01-31&page=2&per_page=50",
		"from=2026-02-30", "to=2026-01-01T00:00:00Z&from=2026-01-01", "from=2026-01-01T00:00:00%2B14:00&to=2026-01-01",
		"space=0", "space=-1", "space=9223372036854775808", "city=Berlin", "page=0&per_page=51", "to=0000-01-01",
		"from=9999-12-31&to=9999-12-31", "city=a%00", "page=1e2", "page=&page=", "per_page=", "city=a&city=b"}
	webtest.FuzzQuery(f, "/v2/events", seeds, func(t *testing.T, c *fiber.Ctx, raw string) {
		fl, p, problems := parseFilter(c)
		if fl.CitySlug != "" && (len(fl.CitySlug) > 100 || !slugRe.MatchString(fl.CitySlug)) {
			t.Fatalf("%q: city %q accepted", raw, fl.CitySlug)
		}
		if fl.SpaceID < 0 || (fl.SpaceID == 0 && c.Query("space") != "" && len(problems) == 0) {
			t.Fatalf("%q: space %d", raw, fl.SpaceID)
		}
		if fl.From != nil && fl.To != nil && !fl.To.After(*fl.From) && len(problems) == 0 {
			t.Fatalf("%q: from %v not before to %v", raw, fl.From, fl.To)
		}
		if p.Number < 1 || p.Number > MaxPage || p.Size < 1 || p.Size > MaxPerPage {
			t.Fatalf("%q: page %+v", raw, p)
		}
		for _, pr := range problems {
			name, _, _ := strings.Cut(pr, " ")
			if !c.Context().QueryArgs().Has(name) {
				t.Fatalf("%q: problem %q is about a parameter not given", raw, pr)
			}
		}
	})
}
