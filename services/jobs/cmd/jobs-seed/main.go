// Command jobs-seed fills the jobs schema.
//
//	jobs-seed demo                              a few dozen demo jobs across the directory's
//	                                            confirmed cities and spaces, created through the
//	                                            same rules as POST /v2/jobs (re-running updates them)
//	jobs-seed synthetic -jobs 100000 -seed 42   a large deterministic data set written with COPY
//	                                            (replaces the previous synthetic set; -offline
//	                                            invents cities instead of reading the directory)
//	jobs-seed list-sql -city berlin -limit 20   runs the listing GET /v2/jobs runs for those filters
//	                                            and prints, as JSON, the statements and arguments
//	                                            pgx sent (count and page), for pgbench (tests/bench);
//	                                            -explain prints their plans instead; -kept the page
//	                                            alone as read with its total and plan kept
//
// demo and synthetic read the cities and spaces from the directory's GET
// /internal/catalog at DIRECTORY_URL, signed with INTERNAL_IDENTITY_SECRET.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/dirapi"
	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/config"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/service"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus/stores/jobdb"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/dirclient"
	"github.com/coworkjobs/coworkjobs/services/jobs/migrations"
)

const schema = "jobs"

// syntheticKeyID marks the rows of the synthetic set so a re-run replaces them.
const syntheticKeyID = -1

type seedConfig struct {
	config.Common
	IdentitySecret  string `env:"INTERNAL_IDENTITY_SECRET"`
	DirectoryURL    string `env:"DIRECTORY_URL" envDefault:"http://127.0.0.1:8082"`
	PublicBaseURL   string `env:"PUBLIC_BASE_URL" envDefault:"http://localhost:8080"`
	DefaultInvEmail string `env:"DEFAULT_INV_EMAIL" envDefault:"jobs@coworkjobs.example"`
}

func main() {
	service.Main("jobs-seed", func(ctx context.Context, log *slog.Logger) error { return run(ctx, log, os.Args[1:]) })
}

func usage() error {
	return errors.New("usage: jobs-seed demo | jobs-seed synthetic [-jobs N] [-seed S] [-offline] [-cities N] | " +
		"jobs-seed list-sql [-city SLUG] [-job-type T] [-q TEXT] [-remote] [-space ID] [-limit N -offset N] [-explain]")
}

func run(ctx context.Context, log *slog.Logger, args []string) error {
	if len(args) == 0 {
		return usage()
	}
	if args[0] == "list-sql" {
		return listSQL(ctx, os.Stdout, args[1:])
	}
	spec := service.Spec{Schema: schema, Migrations: migrations.FS, Defaults: map[string]string{"DB_MAX_CONNS": "4"},
		Changes: []string{scopes.Jobs, scopes.JobsBulk}}
	return service.RunTool(ctx, log, spec, func(ctx context.Context, pool *pgxpool.Pool, cfg *seedConfig) error {
		return seedJobs(ctx, log, cfg, pool, args)
	})
}

// seedJobs runs the demo or synthetic command args.
func seedJobs(ctx context.Context, log *slog.Logger, cfg *seedConfig, pool *pgxpool.Pool, args []string) error {
	catalog := func() (dirapi.Catalog, *dirclient.Client, error) {
		codec, err := identity.NewCodec(cfg.IdentitySecret)
		if err != nil {
			return dirapi.Catalog{}, nil, fmt.Errorf("INTERNAL_IDENTITY_SECRET: %w", err)
		}
		dir := dirclient.New(cfg.DirectoryURL, codec, dirclient.Options{Timeout: 30 * time.Second, CacheTTL: time.Minute})
		cat, err := dir.Catalog(ctx)
		if err != nil {
			return dirapi.Catalog{}, nil, fmt.Errorf("read catalog from %s: %w", cfg.DirectoryURL, err)
		}
		return cat, dir, nil
	}

	switch args[0] {
	case "demo":
		cat, dir, err := catalog()
		if err != nil {
			return err
		}
		bus := jobbus.New(jobdb.New(pool).Stores(), dir, jobbus.Config{PublicBaseURL: cfg.PublicBaseURL, DefaultInvEmail: cfg.DefaultInvEmail})
		return demo(ctx, log, bus, cat)
	case "synthetic":
		fs := flag.NewFlagSet("synthetic", flag.ContinueOnError)
		n := fs.Int("jobs", 100000, "number of jobs")
		seed := fs.Uint64("seed", 42, "random seed (same seed, same data)")
		offline := fs.Bool("offline", false, "invent cities instead of reading the directory catalog")
		nCities := fs.Int("cities", 2000, "cities to invent with -offline")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *n < 1 {
			return errors.New("-jobs must be positive")
		}
		var cat dirapi.Catalog
		if *offline {
			for i := 1; i <= *nCities; i++ {
				// spread over Europe, about 50 km apart
				cat.Cities = append(cat.Cities, dirapi.City{ID: int64(i), Name: "City " + strconv.Itoa(i), Slug: "city-" + strconv.Itoa(i),
					Confirmed: true, Latitude: 36 + float64(i%50)*0.45, Longitude: -9 + float64(i/50%80)*0.6})
			}
		} else {
			var err error
			if cat, _, err = catalog(); err != nil {
				return err
			}
		}
		return synthetic(ctx, log, pool, cat, *n, *seed)
	}
	return usage()
}

var (
	titles    = []string{"Community Manager", "Front Desk Host", "Barista", "Space Operations Lead", "Events Coordinator", "Marketing Manager", "Facility Manager", "Sales Executive", "Member Success Associate", "General Manager", "Housekeeping Lead", "Receptionist", "Growth Marketer", "Office Assistant", "Hospitality Intern"}
	companies = []string{"Factory", "Betahaus", "Mindspace", "Spaces", "Impact Hub", "Second Home", "Ahoy", "WeWork", "Rent24", "Unicorn", "St. Oberholz", "The Office Group", "Talent Garden", "Urban Station"}
	tagPool   = []string{"community", "events", "hospitality", "sales", "marketing", "operations", "front desk", "coffee", "english", "german", "french", "part time", "remote", "facility", "growth"}
	jobTypes  = jobbus.JobTypes
	words     = []string{"members", "events", "coffee", "community", "space", "hospitality", "team", "guests", "bookings", "meeting rooms"}
)

// demo creates a few dozen demo jobs through the create rules (a trusted
// importer posting for each space, so they are active at once).
func demo(ctx context.Context, log *slog.Logger, bus *jobbus.Business, cat dirapi.Catalog) error {
	var spaces []dirapi.Space
	for _, s := range cat.Spaces {
		if s.Confirmed {
			spaces = append(spaces, s)
		}
	}
	cities := confirmedCities(cat)
	if len(cities) == 0 {
		return errors.New("the directory catalog has no confirmed city; seed the directory first")
	}
	r := rand.New(rand.NewPCG(7, 7))
	created, updated := 0, 0
	for i := 0; i < 36; i++ {
		title := titles[i%len(titles)]
		company := companies[r.IntN(len(companies))]
		cityID := cities[i%len(cities)].ID
		caller := jobbus.Caller{KeyID: 0, TrustedImporter: true}
		in := jobbus.CreateInput{}
		if len(spaces) > 0 && i%3 != 2 {
			sp := spaces[i%len(spaces)]
			company = sp.Name
			caller.SpaceID = sp.ID
			if sp.CityID != 0 {
				cityID = sp.CityID
			}
		}
		jt := jobTypes[i%len(jobTypes)]
		tags := tagPool[r.IntN(len(tagPool))] + ", " + tagPool[r.IntN(len(tagPool))]
		desc := fmt.Sprintf("<p>%s wanted at %s.</p><ul><li>Look after our %s</li><li>Run %s</li></ul>", title, company, words[r.IntN(len(words))], words[r.IntN(len(words))])
		ext := fmt.Sprintf("https://jobs.example/%d", i+1)
		remote := int64(0)
		if i%5 == 0 {
			remote = 1
		}
		salMin, salMax := int64(28000+r.IntN(10)*1000), int64(40000+r.IntN(20)*1000)
		in.Title, in.Company, in.Description, in.JobType, in.Tags = &title, &company, &desc, &jt, &tags
		in.IDCity, in.ExternalURL, in.IsRemote, in.SalMin, in.SalMax = &cityID, &ext, &remote, &salMin, &salMax
		res, _, err := bus.Create(ctx, caller, in, nil)
		if err != nil {
			return fmt.Errorf("demo job %d: %w", i+1, err)
		}
		if res.Action == jobbus.ActionCreated {
			created++
		} else {
			updated++
		}
	}
	log.Info("demo jobs seeded", "created", created, "updated", updated)
	return nil
}

// confirmedCities returns the catalog's confirmed cities, which jobs may name.
func confirmedCities(cat dirapi.Catalog) []dirapi.City {
	var cities []dirapi.City
	for _, c := range cat.Cities {
		if c.Confirmed {
			cities = append(cities, c)
		}
	}
	return cities
}

// seedSpan is how far back the synthetic jobs were posted.
const seedSpan = 60 * 24 * time.Hour

// synthetic writes n deterministic jobs with COPY, replacing the previous set.
func synthetic(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool, cat dirapi.Catalog, n int, seed uint64) error {
	cities := confirmedCities(cat)
	if len(cities) == 0 {
		return errors.New("no confirmed city to place jobs in")
	}
	cityByID := make(map[int64]dirapi.City, len(cities))
	for _, c := range cities {
		cityByID[c.ID] = c
	}
	var spaces []dirapi.Space
	for _, s := range cat.Spaces {
		if _, ok := cityByID[s.CityID]; ok && s.Confirmed {
			spaces = append(spaces, s)
		}
	}
	start := time.Now()
	tag, err := pool.Exec(ctx, `DELETE FROM jobs WHERE key_id = $1`, syntheticKeyID)
	if err != nil {
		return fmt.Errorf("delete previous synthetic set: %w", err)
	}
	log.Info("previous synthetic jobs removed", "count", tag.RowsAffected())

	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	now := time.Now().UTC()
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i >= n {
			return nil, nil
		}
		i++
		city := cities[r.IntN(len(cities))]
		var spaceID int64
		var spaceName *string
		company := companies[r.IntN(len(companies))] + " " + strconv.Itoa(r.IntN(500))
		if len(spaces) > 0 && r.IntN(10) < 6 {
			sp := spaces[r.IntN(len(spaces))]
			spaceID, company = sp.ID, sp.Name
			name := sp.Name
			spaceName = &name
			city = cityByID[sp.CityID]
		}
		title := titles[r.IntN(len(titles))]
		if r.IntN(4) == 0 {
			title = "Senior " + title
		}
		t1, t2 := tagPool[r.IntN(len(tagPool))], tagPool[r.IntN(len(tagPool))]
		tags := t1
		if t2 != t1 {
			tags += "," + t2
		}
		ext := "https://jobs.example/synthetic/" + strconv.Itoa(i)
		fp := sha256.Sum256([]byte("synthetic\n" + strconv.FormatUint(seed, 10) + "\n" + strconv.Itoa(i)))
		hash := sha256.Sum256([]byte("hash\n" + strconv.FormatUint(seed, 10) + "\n" + strconv.Itoa(i)))
		// Written in the order a board receives them, oldest first, over
		// the last 60 days: the table's pages follow date_added as a real
		// board's do. Random dates in random order put every job of a
		// newest-first walk on a page of its own (make bench row b3).
		added := now.Add(-time.Duration(int64(n-i)*int64(seedSpan)/int64(n)) - time.Duration(r.IntN(60))*time.Second)
		expires := now.Add(time.Duration(1+r.IntN(60*24*60)) * time.Minute)
		status := jobbus.StatusActive
		switch x := r.IntN(100); {
		case x < 5:
			status = jobbus.StatusDraft
		case x < 10:
			status = jobbus.StatusExpired
		}
		var salMin, salMax *int64
		if r.IntN(2) == 0 {
			lo := int64(25000 + r.IntN(30)*1000)
			hi := lo + int64(r.IntN(20)*1000)
			salMin, salMax = &lo, &hi
		}
		desc := "<p>" + title + " at " + company + ": look after our " + words[r.IntN(len(words))] + ".</p>"
		// One in five remote as before; an eighth of the others hybrid, from
		// the hash so that the random draws (and so the data) stay as they were.
		jobType := jobTypes[r.IntN(len(jobTypes))]
		remote, workplace := r.IntN(5) == 0, jobbus.WorkplaceOnSite
		switch {
		case remote:
			workplace = jobbus.WorkplaceRemote
		case hash[0]%8 == 0:
			workplace = jobbus.WorkplaceHybrid
		}
		return []any{
			hex.EncodeToString(hash[:16]), spaceID, spaceName, int64(syntheticKeyID), hex.EncodeToString(fp[:]),
			title, company, desc, jobType, tags, remote, workplace,
			jobbus.Slug(title, city.Slug), ext + "?ref=coworkjobs", city.ID, city.Name, city.Slug,
			salMin, salMax, "EUR", "jobs@coworkjobs.example", 5, status, added, added, expires, city.Latitude, city.Longitude,
			jobbus.OwnerOf(jobbus.Caller{KeyID: syntheticKeyID, SpaceID: spaceID}),
		}, nil
	})
	copied, err := pool.CopyFrom(ctx, pgx.Identifier{"jobs"}, []string{
		"hash_identifier", "space_id", "space_name", "key_id", "fingerprint",
		"title", "company", "description", "job_type", "tags", "is_remote", "workplace_type",
		"slug", "external_url", "city_id", "city_name", "city_slug",
		"sal_min", "sal_max", "currency", "inv_email", "plan_id", "status", "date_added", "updated_at", "expiration_date",
		"city_lat", "city_lon", "owner_key_id",
	}, src)
	if err != nil {
		return fmt.Errorf("copy jobs: %w", err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE jobs`); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	log.Info("synthetic jobs written", "jobs", copied, "seed", seed, "cities", len(cities), "spaces", len(spaces),
		"duration", time.Since(start).Round(time.Millisecond).String())
	return nil
}
