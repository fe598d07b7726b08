package jobdb

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

var pool *pgxpool.Pool

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "jobdb", pgtest.Schema{Name: "jobs", Migrations: migrations.FS}, pgtest.SetPool(&pool)))
}
