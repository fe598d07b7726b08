package pg_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/libs/pg"
)

// The clause numbers its values in the order they were added, arguments
// outside it (LIMIT) continue the numbering, and Postgres reads it so.
func TestWhere(t *testing.T) {
	var w pg.Where
	if w.String() != "" || len(w.Args()) != 0 {
		t.Fatalf("zero value: %q %v", w.String(), w.Args())
	}
	w.And("n >= " + w.Arg(2))
	w.And("even")
	w.And("n <> " + w.Arg(6))
	q := "SELECT n FROM (SELECT n, n % 2 = 0 AS even FROM generate_series(1, 10) n) s WHERE " + w.String() +
		" ORDER BY n LIMIT " + w.Arg(3)
	if want := "n >= $1 AND even AND n <> $2"; w.String() != want {
		t.Errorf("clause %q, want %q", w.String(), want)
	}
	if args := w.Args(); len(args) != 3 || args[0] != 2 || args[1] != 6 || args[2] != 3 {
		t.Errorf("args %v", args)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, q, w.Args()...)
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 2 || got[1] != 4 || got[2] != 8 {
		t.Errorf("rows %v, want [2 4 8]", got)
	}
}
