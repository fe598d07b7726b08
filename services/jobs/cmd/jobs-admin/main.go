// Command jobs-admin is the operator's tool for jobs: mark-paid records the
// payment of an invoiced paid plan (the invoice provider, when no Stripe
// settings are given), which publishes or relists the job; backfill-geo
// copies the directory's city coordinates into the jobs written before
// near= existed; erase-address and export-address are the operator's side
// of an address's erasure and export across jobs and community.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus/stores/alertdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/privacybus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/commclient"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/dirclient"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/payment/invoicepay"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

type cliConfig struct {
	config.Common
	// PublicBaseURL builds the job's links in jobbus; mark-paid prints none.
	PublicBaseURL string `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	// backfill-geo reads the directory's catalog.
	DirectoryURL string `env:"DIRECTORY_URL" envDefault:"http://127.0.0.1:8082"`
	// erase-address and export-address reach the newsletter's data there.
	CommunityURL   string `env:"COMMUNITY_URL" envDefault:"http://127.0.0.1:8084"`
	IdentitySecret string `env:"INTERNAL_IDENTITY_SECRET"`
}

const usage = `usage: jobs-admin <command> [flags]

commands:
  mark-paid  -job ID -reference INVOICE [-amount MINOR_UNITS]
             records the invoice's payment (amount default: the plan's price × 100):
             a paid plan's draft is published, an expired job relisted; the same
             reference again prints already_recorded and changes nothing
  erase-address -email ADDRESS
             erases the address everywhere (docs/privacy.md): its job alerts with their
             matches and the address here, and its newsletter subscription in community
             (COMMUNITY_URL, INTERNAL_IDENTITY_SECRET); community away, the erasure waits
             in the outbox and the jobs worker hands it over once it is back
  export-address -email ADDRESS
             prints as JSON everything both services hold about the address
  backfill-geo
             copies each city's coordinates and country from the directory (DIRECTORY_URL,
             INTERNAL_IDENTITY_SECRET) into its jobs, for near=; safe to run again

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
	case "mark-paid", "backfill-geo", "erase-address", "export-address":
	default:
		fmt.Fprint(out, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
	spec := service.Spec{Schema: "jobs", Migrations: migrations.FS, Defaults: map[string]string{"DB_MAX_CONNS": "2"},
		Changes: []string{scopes.Jobs, scopes.JobsBulk}}
	// Silent: what a command says goes to out, its error to stderr.
	return service.RunTool(ctx, slog.New(slog.DiscardHandler), spec, func(ctx context.Context, pool *pgxpool.Pool, cfg *cliConfig) error {
		if args[0] == "erase-address" || args[0] == "export-address" {
			return address(ctx, cfg, pool, args[0], args[1:], out)
		}
		if args[0] == "backfill-geo" {
			return backfillGeo(ctx, cfg, jobdb.New(pool), out)
		}
		// No directory client: a payment never resolves a city or a space.
		bus := jobbus.New(jobdb.New(pool).Stores(), nil, jobbus.Config{PublicBaseURL: cfg.PublicBaseURL})
		return invoicepay.MarkPaidCommand(ctx, bus, args[1:], out)
	})
}

// address runs erase-address or export-address on -email.
func address(ctx context.Context, cfg *cliConfig, pool *pgxpool.Pool, cmd string, args []string, out io.Writer) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(out)
	email := fs.String("email", "", "the address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if strings.TrimSpace(*email) == "" {
		return fmt.Errorf("%s: -email is required", cmd)
	}
	codec, err := identity.NewCodec(cfg.IdentitySecret)
	if err != nil {
		return fmt.Errorf("INTERNAL_IDENTITY_SECRET: %w", err)
	}
	sealer, err := privacy.NewSealer([]byte(cfg.IdentitySecret))
	if err != nil {
		return fmt.Errorf("INTERNAL_IDENTITY_SECRET: %w", err)
	}
	store := alertdb.New(pool)
	bus := &privacybus.Business{Store: store, Sealer: sealer, Community: commclient.New(cfg.CommunityURL, codec, 10*time.Second)}
	if cmd == "export-address" {
		exp, err := bus.Export(ctx, *email)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(exp)
	}
	n, err := bus.Erase(ctx, *email)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "jobs: %d alerts erased, with their matches and the address\n", n)
	// Hand the queued erasures to community now, as the worker would.
	relay := privacybus.Relay(bus, store.PrivacyOutboxTable(), func(it alertdb.PrivacyItem) string { return it.Token },
		outbox.Relay[alertdb.PrivacyItem]{Log: slog.New(slog.DiscardHandler)})
	res, err := relay.RunOnce(ctx)
	left, lerr := store.PrivacyOutboxLen(ctx)
	switch {
	case err == nil && lerr == nil && left == 0:
		fmt.Fprintf(out, "community: erased (%d erasures handed over)\n", res.Delivered)
	default:
		fmt.Fprintf(out, "community: not reached now (%d erasures queued); the jobs worker hands them over once it answers\n", left)
	}
	return nil
}

// backfillGeo gives the jobs of every city in the directory's catalog that
// city's coordinates.
func backfillGeo(ctx context.Context, cfg *cliConfig, store *jobdb.Store, out io.Writer) error {
	codec, err := identity.NewCodec(cfg.IdentitySecret)
	if err != nil {
		return fmt.Errorf("INTERNAL_IDENTITY_SECRET: %w", err)
	}
	cat, err := dirclient.New(cfg.DirectoryURL, codec, dirclient.Options{Timeout: 30 * time.Second}).Catalog(ctx)
	if err != nil {
		return fmt.Errorf("read the directory's catalog: %w", err)
	}
	coords := make([]jobdb.CityCoords, 0, len(cat.Cities))
	for _, c := range cat.Cities {
		coords = append(coords, jobdb.CityCoords{CityID: c.ID, Lat: c.Latitude, Lon: c.Longitude, Country: c.CountryCode})
	}
	n, err := store.SetCityCoords(ctx, coords)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d jobs of %d cities updated\n", n, len(coords))
	return nil
}
