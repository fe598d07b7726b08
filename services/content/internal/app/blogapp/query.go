package blogapp

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
)

// query reads query parameters and collects every problem, so that a 422
// lists them all at once. Parameters it is not asked about are ignored (the
// gateway accepts the API key as ?api_key=).
type query struct {
	c        *fiber.Ctx
	problems []string
}

func newQuery(c *fiber.Ctx) *query { return &query{c: c} }

// raw returns the single value of name and whether it was given.
func (q *query) raw(name string) (string, bool) {
	args := q.c.Context().QueryArgs()
	vals := args.PeekMulti(name)
	switch len(vals) {
	case 0:
		return "", false
	case 1:
		return string(vals[0]), true
	default:
		q.problems = append(q.problems, name+" must be given at most once")
		return string(vals[0]), true
	}
}

// text returns a trimmed text parameter of at most maxLen characters; given
// but empty, too long, or not valid UTF-8 is a problem.
func (q *query) text(name string, maxLen int) (string, bool) {
	v, ok := q.raw(name)
	if !ok {
		return "", false
	}
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		q.problems = append(q.problems, name+" must not be empty when given")
	case !utf8.ValidString(v) || strings.ContainsRune(v, 0):
		q.problems = append(q.problems, name+" must be valid UTF-8 text")
	case utf8.RuneCountInString(v) > maxLen:
		q.problems = append(q.problems, fmt.Sprintf("%s must be at most %d characters", name, maxLen))
	default:
		return v, true
	}
	return "", true
}

// intIn returns an integer parameter in [min, max], or def when absent.
func (q *query) intIn(name string, def, min, max int) int {
	v, ok := q.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		q.problems = append(q.problems, fmt.Sprintf("%s must be an integer from %d to %d", name, min, max))
		return def
	}
	return n
}
