// Package tests drives the content service through real HTTP requests
// (Fiber's app.Test) against a throwaway database on the real Postgres.
package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coworkjobs/coworkjobs/api/contract"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/pg"
	"github.com/coworkjobs/coworkjobs/libs/pg/pgtest"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/libs/web/webtest"
	"github.com/coworkjobs/coworkjobs/services/content/internal/app/blogapp"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus"
	"github.com/coworkjobs/coworkjobs/services/content/internal/business/postbus/stores/postdb"
	"github.com/coworkjobs/coworkjobs/services/content/migrations"
)

// checker validates every answer of a documented route against api/openapi.yaml.
var checker = contract.MustNew()

const (
	secret  = "test-secret-test-secret-test-secret-0123"
	baseURL = "https://coworkjobs.example"
)

var (
	pool *pgxpool.Pool
	svc  *webtest.Service
)

func TestMain(m *testing.M) {
	os.Exit(pgtest.MainMigrated(m, "content_http", pgtest.Schema{Name: "content", Migrations: migrations.FS, Pool: pg.Options{MaxConns: 4}}, setup))
}

func setup(db pgtest.Migrated) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool = db.Pool
	bus := postbus.New(postdb.New(pool), nil)
	for _, p := range fixtures(time.Now()) {
		if _, err := bus.Upsert(ctx, p); err != nil {
			return err
		}
	}
	var err error
	svc, err = webtest.NewService("content", secret, checker, func(srv *web.Server, codec *identity.Codec) error {
		blogapp.Routes(srv.App.Group("/v2", codec.Middleware()), bus, blogapp.Config{PublicBaseURL: baseURL + "/", FeedMaxAge: 60})
		return nil
	})
	return err
}

// words returns n distinct-looking words.
func words(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "word%d ", i)
	}
	return b.String()
}

// unsafeBody mixes 500 visible words with everything the sanitiser must
// remove; none of the removed text counts towards the reading time.
var unsafeBody = `<h2 onclick="steal()">Intro</h2><p style="color:red">` + words(499) + `</p>` +
	`<script>alert("xss") one two three four five six seven eight nine ten</script>` +
	`<style>body{display:none}</style>` +
	`<a href="javascript:alert(1)">bad link</a>` +
	`<a href="https://example.org/page">good link</a>` +
	`<img src="x" onerror="alert(1)">` +
	`<iframe src="https://evil.example"></iframe>`

var (
	mara  = postbus.Author{Name: "Mara Lindqvist", Username: "mara"}
	jonas = postbus.Author{Name: "Jonas Becker", Username: "jonas"}
)

func term(name, slug string) postbus.Term { return postbus.Term{Name: name, Slug: slug} }

// fixtures: five public posts (charlie and delta share a publication time),
// one draft and one scheduled post.
func fixtures(now time.Time) []postbus.NewPost {
	now = now.Truncate(time.Second)
	tie := now.Add(-3 * time.Hour)
	pub := func(title, slug string, at time.Time, cats, tags []postbus.Term, authors ...postbus.Author) postbus.NewPost {
		return postbus.NewPost{Title: title, Slug: slug, BodyHTML: "<p>" + words(100) + "</p>",
			Status: postbus.StatusPublished, PublishedAt: at, Authors: authors, Categories: cats, Tags: tags}
	}
	careers, community := term("Careers", "careers"), term("Community", "community")
	hiring, events := term("Hiring", "hiring"), term("Events", "events")
	unsafe := pub("Unsafe body", "unsafe", now.Add(-5*time.Hour), nil, nil, mara)
	unsafe.BodyHTML = unsafeBody
	unsafe.Excerpt = "A hand-written excerpt."
	draft := pub("Draft post", "draft-post", now.Add(-time.Minute), []postbus.Term{careers}, []postbus.Term{hiring}, mara)
	draft.Status = postbus.StatusDraft
	return []postbus.NewPost{
		pub("Alpha", "alpha", now.Add(-time.Hour), []postbus.Term{careers}, []postbus.Term{hiring, events}, mara, jonas),
		pub("Bravo", "bravo", now.Add(-2*time.Hour), []postbus.Term{community}, []postbus.Term{events}, jonas),
		pub("Charlie", "charlie", tie, []postbus.Term{careers, community}, nil, mara),
		pub("Delta", "delta", tie, nil, []postbus.Term{hiring}, jonas),
		unsafe,
		draft,
		pub("Future post", "future-post", now.Add(24*time.Hour), []postbus.Term{careers}, []postbus.Term{hiring}, mara),
	}
}

// public is what the gateway forwards for a public route.
var public = identity.Identity{Kind: identity.KindPublic, ClientIP: "203.0.113.7"}

// publicIdentity is the identity header of public.
func publicIdentity(t *testing.T) string {
	t.Helper()
	return svc.Sign(t, public)
}

// do sends a request through the app; headers may carry the identity.
func do(t *testing.T, method, target string, headers map[string]string) webtest.Reply {
	t.Helper()
	return svc.Do(t, webtest.Request{Method: method, Target: target, Header: headers})
}

// get is a public GET through the gateway's identity.
func get(t *testing.T, target string) webtest.Reply {
	t.Helper()
	return svc.Do(t, webtest.Request{Method: http.MethodGet, Target: target, Identity: &public})
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}
