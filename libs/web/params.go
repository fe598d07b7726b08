package web

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
)

// Query reads a request's query parameters one by one and collects every
// problem, so that one 422 lists them all. Parameters it is not asked about
// are ignored (the gateway passes api_key along). Every value it returns is
// the caller's own copy, whatever the app's Immutable setting.
type Query struct {
	c        *fiber.Ctx
	problems []string
}

// Params starts reading the query of c.
func Params(c *fiber.Ctx) *Query { return &Query{c: c} }

// Raw returns the value of name and whether it was given. A parameter given
// more than once is a problem (which value was meant cannot be known) and
// reads as "".
func (q *Query) Raw(name string) (string, bool) {
	v, given, _ := q.one(name)
	return v, given
}

// one returns the single value of name; ok is false when it is absent or
// was refused for being repeated.
func (q *Query) one(name string) (v string, given, ok bool) {
	vals := q.c.Context().QueryArgs().PeekMulti(name)
	switch len(vals) {
	case 0:
		return "", false, false
	case 1:
		return string(vals[0]), true, true
	}
	q.Add(name + " must be given at most once")
	return "", true, false
}

// Int returns an integer parameter in [min, max], or def when it is absent;
// any other value, an empty one included, is a problem and reads as def.
func (q *Query) Int(name string, def, min, max int) int {
	v, _, ok := q.one(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		q.Add(fmt.Sprintf("%s must be an integer between %d and %d", name, min, max))
		return def
	}
	return n
}

// Text returns a text parameter trimmed of white space, and whether it was
// given: "" when absent or empty. Invalid UTF-8, a control character, or more
// than maxLen characters once trimmed is a problem and reads as "".
func (q *Query) Text(name string, maxLen int) (string, bool) {
	v, given, ok := q.one(name)
	if !ok {
		return "", given
	}
	switch {
	case !utf8.ValidString(v):
		q.Add(name + " must be valid UTF-8 text")
	case strings.ContainsFunc(v, unicode.IsControl):
		q.Add(name + " must not contain control characters")
	case utf8.RuneCountInString(strings.TrimSpace(v)) > maxLen:
		q.Add(fmt.Sprintf("%s must be at most %d characters", name, maxLen))
	default:
		return strings.TrimSpace(v), true
	}
	return "", true
}

// NonEmptyText is Text for a parameter that means nothing when empty: given
// with nothing but white space, it is a problem.
func (q *Query) NonEmptyText(name string, maxLen int) (string, bool) {
	before := len(q.problems)
	v, ok := q.Text(name, maxLen)
	if ok && v == "" && len(q.problems) == before {
		q.Add(name + " must not be empty when given")
	}
	return v, ok
}

// Add records a problem found by the caller's own rules.
func (q *Query) Add(problem string) { q.problems = append(q.problems, problem) }

// Problems returns the problems found so far, in the order found.
func (q *Query) Problems() []string { return q.problems }

// Err is nil when no problem was found, else the 422 validation_error that
// lists them all.
func (q *Query) Err() error {
	if len(q.problems) == 0 {
		return nil
	}
	return Validation("Validation failed", q.problems)
}
