package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
)

// MIGRATE_ONLY=true applies a service's migrations and exits 0: the Helm
// chart's pre-install/pre-upgrade hook relies on it.
func TestMigrateOnlyAppliesSchemaAndExits(t *testing.T) {
	db, err := pgtest.Create("e2e_migrate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Drop() })
	for _, svc := range []string{"gateway", "jobs", "directory", "content", "community"} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, filepath.Join(s.bin, svc))
		cmd.Env = append(append([]string{}, s.env...), "DATABASE_URL="+db.URL, "MIGRATE_ONLY=true", "HTTP_ADDR=127.0.0.1:1")
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", svc, err, out)
		}
		conn, err := pgx.Connect(context.Background(), db.URL)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = conn.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{svc, "goose_db_version"}.Sanitize()+" WHERE version_id > 0").Scan(&n)
		conn.Close(context.Background())
		if err != nil || n == 0 {
			t.Fatalf("%s: no migration recorded (%d, %v)", svc, n, err)
		}
	}
}
