package dirdb_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/directory/migrations"
)

var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "directory_dirdb", pgtest.Schema{Name: "directory", Migrations: migrations.FS, Pool: pg.Options{MaxConns: 2}}, pgtest.SetPool(&pool)))
}

// TestFoldName pins the accent and case folding that search and resolution
// rely on (the SQL function behind cities.search_name).
func TestFoldName(t *testing.T) {
	ctx := context.Background()
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
