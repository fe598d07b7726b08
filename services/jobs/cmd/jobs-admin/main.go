// Command jobs-admin is the operator's tool for jobs: mark-paid records the
// payment of an invoiced paid plan (the invoice provider, when no Stripe
// settings are given), which publishes or relists the job.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/invoicepay"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

type cliConfig struct {
	DatabaseURL string `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/coworkjobs?sslmode=disable"`
	// PublicBaseURL builds the job's links in jobbus; mark-paid prints none.
	PublicBaseURL string `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
}

const usage = `usage: jobs-admin <command> [flags]

commands:
  mark-paid  -job ID -reference INVOICE [-amount MINOR_UNITS]
             records the invoice's payment (amount default: the plan's price × 100):
             a paid plan's draft is published, an expired job relisted; the same
             reference again prints already_recorded and changes nothing

DATABASE_URL selects the database (default: the local coworkjobs database).
`

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "jobs-admin:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(out, usage)
		return errors.New("a command is required")
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(out, usage)
		return nil
	case "mark-paid":
	default:
		fmt.Fprint(out, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
	var cfg cliConfig
	if err := config.Parse(&cfg); err != nil {
		return err
	}
	pool, err := pg.Open(ctx, cfg.DatabaseURL, "jobs", pg.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pg.Migrate(ctx, pool, "jobs", migrations.FS, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		return err
	}
	// No directory client: a payment never resolves a city or a space.
	bus := jobbus.New(jobdb.New(pool), nil, jobbus.Config{PublicBaseURL: cfg.PublicBaseURL})
	return invoicepay.MarkPaidCommand(ctx, bus, args[1:], out)
}
