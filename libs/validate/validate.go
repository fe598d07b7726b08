// Package validate is the error a business package returns for input it
// rejects: every problem at once, which the handler answers as a 422 with
// the problems as details (web.Validation). It knows no business type: the
// business package names the input.
package validate

import "strings"

// Error lists every problem of a rejected input.
type Error struct {
	// What names the input in Error's text ("job", "subscription").
	What     string
	Problems []string
}

func (e *Error) Error() string { return "invalid " + e.What + ": " + strings.Join(e.Problems, "; ") }
