package web_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// withQuery runs fn on a Fiber context for GET /?query. The app is not
// Immutable, so a value the reader did not copy would change under the test
// once the context is reused.
func withQuery(t *testing.T, query string, fn func(c *fiber.Ctx)) {
	t.Helper()
	app := fiber.New()
	var rc fasthttp.RequestCtx
	rc.Request.SetRequestURI("/?" + query)
	c := app.AcquireCtx(&rc)
	defer app.ReleaseCtx(c)
	fn(c)
}

func TestQueryInt(t *testing.T) {
	tests := []struct {
		name     string
		query    string
		want     int
		problems []string
	}{
		{"absentIsDefault", "", 20, nil},
		{"inRange", "n=7", 7, nil},
		{"min", "n=1", 1, nil},
		{"max", "n=50", 50, nil},
		{"belowMin", "n=0", 20, []string{"n must be an integer between 1 and 50"}},
		{"aboveMax", "n=51", 20, []string{"n must be an integer between 1 and 50"}},
		{"notANumber", "n=ten", 20, []string{"n must be an integer between 1 and 50"}},
		{"fraction", "n=1.5", 20, []string{"n must be an integer between 1 and 50"}},
		{"exponent", "n=1e1", 20, []string{"n must be an integer between 1 and 50"}},
		{"emptyWhenGiven", "n=", 20, []string{"n must be an integer between 1 and 50"}},
		{"overflow", "n=99999999999999999999", 20, []string{"n must be an integer between 1 and 50"}},
		{"repeated", "n=1&n=2", 20, []string{"n must be given at most once"}},
		{"otherParametersIgnored", "api_key=x&m=3", 20, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withQuery(t, tc.query, func(c *fiber.Ctx) {
				q := web.Params(c)
				if got := q.Int("n", 20, 1, 50); got != tc.want {
					t.Errorf("Int = %d, want %d", got, tc.want)
				}
				if !slices.Equal(q.Problems(), tc.problems) {
					t.Errorf("problems %q, want %q", q.Problems(), tc.problems)
				}
			})
		})
	}
}

func TestQueryText(t *testing.T) {
	tests := []struct {
		name      string
		query     string
		nonEmpty  bool
		want      string
		wantGiven bool
		problems  []string
	}{
		{"absent", "", false, "", false, nil},
		{"trimmed", "s=%20%20z%C3%BCri%20", false, "züri", true, nil},
		{"emptyAllowed", "s=", false, "", true, nil},
		{"blankAllowed", "s=++", false, "", true, nil},
		{"atMaxCharactersNotBytes", "s=" + strings.Repeat("%C3%BC", 5), false, "üüüüü", true, nil},
		{"tooLong", "s=abcdef", false, "", true, []string{"s must be at most 5 characters"}},
		{"lengthAfterTrim", "s=+abcde+", false, "abcde", true, nil},
		{"invalidUTF8", "s=%ff", false, "", true, []string{"s must be valid UTF-8 text"}},
		{"nul", "s=a%00b", false, "", true, []string{"s must not contain control characters"}},
		{"newline", "s=a%0Ab", false, "", true, []string{"s must not contain control characters"}},
		{"repeated", "s=a&s=b", false, "", true, []string{"s must be given at most once"}},
		{"nonEmptyGiven", "s=x", true, "x", true, nil},
		{"nonEmptyAbsent", "", true, "", false, nil},
		{"nonEmptyEmpty", "s=", true, "", true, []string{"s must not be empty when given"}},
		{"nonEmptyBlank", "s=+++", true, "", true, []string{"s must not be empty when given"}},
		{"nonEmptyBadIsOneProblem", "s=%ff", true, "", true, []string{"s must be valid UTF-8 text"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			withQuery(t, tc.query, func(c *fiber.Ctx) {
				q := web.Params(c)
				read := q.Text
				if tc.nonEmpty {
					read = q.NonEmptyText
				}
				got, given := read("s", 5)
				if got != tc.want || given != tc.wantGiven {
					t.Errorf("Text = %q, %v; want %q, %v", got, given, tc.want, tc.wantGiven)
				}
				if !slices.Equal(q.Problems(), tc.problems) {
					t.Errorf("problems %q, want %q", q.Problems(), tc.problems)
				}
			})
		})
	}
}

func TestQueryErrCollectsEveryProblem(t *testing.T) {
	withQuery(t, "page=0&per_page=x&city=%ff&sort=odd", func(c *fiber.Ctx) {
		q := web.Params(c)
		if q.Err() != nil {
			t.Fatal("Err before any problem")
		}
		q.Int("page", 1, 1, 100)
		q.Int("per_page", 20, 1, 50)
		q.Text("city", 100)
		if v, _ := q.Raw("sort"); v != "relevance" {
			q.Add("sort must be relevance")
		}
		e, ok := web.AsError(q.Err())
		want := []string{"page must be an integer between 1 and 100", "per_page must be an integer between 1 and 50",
			"city must be valid UTF-8 text", "sort must be relevance"}
		if !ok || e.Status != 422 || e.Code != web.CodeValidation || e.Message != "Validation failed" || !slices.Equal(e.Details.([]string), want) {
			t.Fatalf("Err = %#v, want 422 with %q", q.Err(), want)
		}
	})
}

// A value read from the query is the caller's own: it outlives the request
// (Fiber reuses the buffer it came from).
func TestQueryValuesAreCopies(t *testing.T) {
	var raw, text string
	withQuery(t, "a=alpha&b=bravo", func(c *fiber.Ctx) {
		q := web.Params(c)
		raw, _ = q.Raw("a")
		text, _ = q.Text("b", 10)
		c.Request().SetRequestURI("/?a=XXXXX&b=YYYYY")
		c.Context().QueryArgs().Parse("a=XXXXX&b=YYYYY")
	})
	if raw != "alpha" || text != "bravo" {
		t.Fatalf("values changed with the request: %q, %q", raw, text)
	}
}
