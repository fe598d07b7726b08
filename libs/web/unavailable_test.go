package web_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// sqlStateError is shaped like pgconn.PgError for the classification.
type sqlStateError struct{ code string }

func (e *sqlStateError) Error() string    { return "ERROR (SQLSTATE " + e.code + ")" }
func (e *sqlStateError) SQLState() string { return e.code }

// connClosed is shaped like pgconn's error for a connection closed under the
// pool: nothing was sent, so it is safe to retry.
type connClosed struct{}

func (connClosed) Error() string     { return "conn closed" }
func (connClosed) SafeToRetry() bool { return true }

// A database (or any dependency) that cannot be reached is a 503 the client
// may retry, not a 500; a query error is still a 500.
func TestDependencyOutageIs503(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"connectionRefused503", fmt.Errorf("list: begin: failed to connect: %w", refused), 503},
		{"cutMidAnswer503", fmt.Errorf("delete outbox: %w", io.ErrUnexpectedEOF), 503},
		{"reset503", fmt.Errorf("query: %w", syscall.ECONNRESET), 503},
		{"startingUp503", fmt.Errorf("connect: %w", &sqlStateError{"57P03"}), 503},
		{"adminShutdown503", fmt.Errorf("query: %w", &sqlStateError{"57P01"}), 503},
		{"connectionException503", fmt.Errorf("query: %w", &sqlStateError{"08006"}), 503},
		{"tooManyConnections503", fmt.Errorf("connect: %w", &sqlStateError{"53300"}), 503},
		{"outOfMemory500", fmt.Errorf("query: %w", &sqlStateError{"53200"}), 500},
		{"connClosedUnderThePool503", fmt.Errorf("list posts: begin: %w", connClosed{}), 503},
		{"uniqueViolation500", fmt.Errorf("insert: %w", &sqlStateError{"23505"}), 500},
		{"badUTF8500", fmt.Errorf("insert: %w", &sqlStateError{"22021"}), 500},
		{"plain500", errors.New("boom"), 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := web.Classify(tc.err)
			if e.Status != tc.want || (tc.want == 503 && e.Code != web.CodeServiceUnavailable) {
				t.Fatalf("%v: %d %s", tc.err, e.Status, e.Code)
			}
		})
	}
}
