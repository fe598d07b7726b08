package dirdb_test

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/directory/migrations"
)

var dbURL string

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main("directory_dirdb", m.Run, func(u string) { dbURL = u }))
}

// TestFoldName pins the accent and case folding that search and resolution
// rely on (the SQL function behind cities.search_name).
func TestFoldName(t *testing.T) {
	ctx := context.Background()
	pool, err := pg.Open(ctx, dbURL, "directory", pg.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := pg.Migrate(ctx, pool, "directory", migrations.FS, logx.NewTo(io.Discard, "test", "error")); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{"Zürich", "zurich"},
		{"ZÜRICH", "zurich"},
		{"São Paulo", "sao paulo"},
		{"Łódź", "lodz"},
		{"Kraków", "krakow"},
		{"Malmö", "malmo"},
		{"Tromsø", "tromso"},
		{"Reykjavík", "reykjavik"},
		{"Großbeeren", "grossbeeren"},
		{"Ærøskøbing", "aeroskobing"},
		{"Cluj-Napoca", "cluj napoca"},
		{"İstanbul", "istanbul"},
		{"Đà Nẵng", "da nang"},
		{"Besançon", "besancon"},
		{"Presqu’île", "presqu'ile"},
		{"plain", "plain"},
		{"100% _x_", "100% _x_"},
	}
	for _, tc := range tests {
		var got string
		if err := pool.QueryRow(ctx, `SELECT fold_name($1)`, tc.in).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("fold_name(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
