package pg

import (
	"strconv"
	"strings"
)

// Where builds the WHERE clause of a statement from optional filters: the
// conditions joined by AND, every value a numbered parameter ($1, $2, ...)
// in the order Arg was called. The zero value is ready to use.
type Where struct {
	conds strings.Builder
	args  []any
}

// Arg adds v to the statement's arguments and returns its placeholder. A
// statement may take arguments outside the clause (LIMIT, a CTE) from it too.
func (w *Where) Arg(v any) string {
	if w.args == nil {
		w.args = make([]any, 0, 12)
	}
	w.args = append(w.args, v)
	return "$" + strconv.Itoa(len(w.args))
}

// And adds a condition (its values written with Arg).
func (w *Where) And(cond string) {
	if w.conds.Len() > 0 {
		w.conds.WriteString(" AND ")
	}
	w.conds.WriteString(cond)
}

// String returns the conditions joined by AND, without the WHERE keyword.
func (w *Where) String() string { return w.conds.String() }

// Args returns the arguments, in placeholder order.
func (w *Where) Args() []any { return w.args }
