// Command gateway-keys manages API keys (the spec has no HTTP endpoints for
// them): create prints the full key once, list never prints a key, revoke and
// rotate do what they say, demo replaces the demo keys used by `make run`.
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
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus/stores/keydb"
	"github.com/coworkjobs/coworkjobs/services/gateway/migrations"
)

const usage = `usage: gateway-keys <command> [flags]

commands:
  create  -name NAME -scopes read,jobs:write [-restricted] [-space ID] [-rate-limit N] [-trusted-importer]
          prints the full key once; it cannot be shown again
  list    lists keys (id, hint, space, scopes, limits, times); never prints a key
  revoke  -id ID
  rotate  -id ID [-grace 24h]
          prints the replacement (same settings) once; the old key stops at
          once, or at the end of -grace (at most 168h)
  demo    revokes earlier demo keys and creates one of each kind for make run

DATABASE_URL selects the database (default: the local coworkjobs database).
`

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gateway-keys:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(out, usage)
		return errors.New("a command is required")
	}
	spec := service.Spec{Schema: "gateway", Migrations: migrations.FS, Defaults: map[string]string{"DB_MAX_CONNS": "2"}}
	// Silent: what a command says goes to out, its error to stderr.
	return service.RunTool(ctx, slog.New(slog.DiscardHandler), spec, func(ctx context.Context, pool *pgxpool.Pool, _ *config.Common) error {
		return command(ctx, keybus.New(keydb.New(pool), slog.Default(), 0), args, out)
	})
}

func command(ctx context.Context, keys *keybus.Business, args []string, out io.Writer) error {
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "create":
		return create(ctx, keys, rest, out)
	case "list":
		return list(ctx, keys, out)
	case "revoke":
		id, err := idFlag("revoke", rest)
		if err != nil {
			return err
		}
		if err := keys.Revoke(ctx, id); err != nil {
			return fmt.Errorf("revoke %d: %w", id, err)
		}
		fmt.Fprintf(out, "key %d revoked\n", id)
		return nil
	case "rotate":
		fs := flag.NewFlagSet("rotate", flag.ContinueOnError)
		id := fs.Int64("id", 0, "key id (from list)")
		grace := fs.Duration("grace", 0, "how long the old key keeps working (at most 168h)")
		if err := fs.Parse(rest); err != nil {
			return err
		}
		if *id <= 0 {
			return errors.New("-id is required")
		}
		if *grace < 0 || *grace > keybus.MaxGrace {
			return errors.New("-grace must be between 0 and 168h")
		}
		k, raw, err := keys.RotateWithGrace(ctx, *id, *grace)
		if err != nil {
			return fmt.Errorf("rotate %d: %w", *id, err)
		}
		until := "now"
		if *grace > 0 {
			until = "in " + grace.String()
		}
		fmt.Fprintf(out, "key %d replaced (it stops %s); replacement id %d (shown once):\n%s\n", *id, until, k.ID, raw)
		return nil
	case "demo":
		return demo(ctx, keys, out)
	case "help", "-h", "--help":
		fmt.Fprint(out, usage)
		return nil
	}
	fmt.Fprint(out, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

func idFlag(name string, args []string) (int64, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	id := fs.Int64("id", 0, "key id (from list)")
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	if *id <= 0 {
		return 0, errors.New("-id is required")
	}
	return *id, nil
}

func create(ctx context.Context, keys *keybus.Business, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("create", flag.ContinueOnError)
	name := fs.String("name", "", "what the key is for")
	scopes := fs.String("scopes", "", "comma-separated: "+strings.Join(keybus.AllScopes, ", "))
	restricted := fs.Bool("restricted", false, "svc_rstr_ key: read-only whatever its scopes")
	space := fs.Int64("space", 0, "scope the key to this space id")
	limit := fs.Int("rate-limit", 0, "writes per minute (default: the gateway's)")
	importer := fs.Bool("trusted-importer", false, "jobs created with this key start active")
	asJSON := fs.Bool("json", false, "print {id, key} as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	k, raw, err := keys.Create(ctx, keybus.NewKey{
		Name: *name, Restricted: *restricted, SpaceID: *space, Scopes: splitScopes(*scopes),
		RateLimitPerMinute: *limit, TrustedImporter: *importer,
	})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(map[string]any{"id": k.ID, "key": raw})
	}
	fmt.Fprintf(out, "key %d created (shown once, store it now):\n%s\n", k.ID, raw)
	return nil
}

func splitScopes(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func list(ctx context.Context, keys *keybus.Business, out io.Writer) error {
	all, err := keys.List(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tKEY\tSPACE\tSCOPES\tLIMIT/MIN\tIMPORTER\tCREATED\tLAST USED\tREVOKED")
	for _, k := range all {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%t\t%s\t%s\t%s\n", k.ID, k.Name, k.Hint, orDash(k.SpaceID),
			strings.Join(k.Scopes, ","), orDash(int64(k.RateLimitPerMinute)), k.TrustedImporter,
			k.CreatedAt.UTC().Format(time.RFC3339), timeOrDash(k.LastUsedAt), timeOrDash(k.RevokedAt))
	}
	return tw.Flush()
}

func orDash(v int64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// demoKeys are the kinds a new user of `make run` wants to try. Space 1 is the
// demo set's confirmed Pro space and space 2 its confirmed non-Pro space.
var demoKeys = []keybus.NewKey{
	{Name: "demo: live platform key", Scopes: []string{keybus.ScopeWrite}},
	{Name: "demo: trusted importer", Scopes: []string{keybus.ScopeWrite}, TrustedImporter: true},
	{Name: "demo: space 1 (Pro) key", SpaceID: 1, Scopes: []string{keybus.ScopeRead, keybus.ScopeJobsWrite}},
	{Name: "demo: space 2 (non-Pro) key", SpaceID: 2, Scopes: []string{keybus.ScopeRead, keybus.ScopeJobsWrite}},
	{Name: "demo: restricted read-only key", Restricted: true, Scopes: []string{keybus.ScopeRead}},
}

func demo(ctx context.Context, keys *keybus.Business, out io.Writer) error {
	all, err := keys.List(ctx)
	if err != nil {
		return err
	}
	for _, k := range all {
		if strings.HasPrefix(k.Name, "demo: ") && k.RevokedAt == nil {
			if err := keys.Revoke(ctx, k.ID); err != nil {
				return err
			}
		}
	}
	for _, n := range demoKeys {
		_, raw, err := keys.Create(ctx, n)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-32s %s\n", strings.TrimPrefix(n.Name, "demo: "), raw)
	}
	return nil
}
