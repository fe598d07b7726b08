// Package dirclient calls the directory service's internal API
// (docs/internal-api.md) with a signed service identity: city resolution,
// space facts and the catalog the seeders read.
package dirclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/coworkjobs/coworkjobs/api/dirapi"
	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/telemetry"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Client is the directory's internal API.
type Client struct {
	base  string
	codec *identity.Codec
	http  *http.Client
	ttl   time.Duration

	mu     sync.Mutex
	header string
	expiry time.Time
	cities map[int64]cached[jobbus.City]
	spaces map[int64]cached[jobbus.Space]
	slugs  map[string]cached[int64] // space slug -> id
}

type cached[T any] struct {
	v     T
	ok    bool
	until time.Time
}

// Options tune the client.
type Options struct {
	Timeout  time.Duration // per request; default 2s
	CacheTTL time.Duration // how long city and space facts by id are reused; 0 disables
}

// New returns a client of the directory at baseURL.
func New(baseURL string, codec *identity.Codec, opt Options) *Client {
	if opt.Timeout <= 0 {
		opt.Timeout = 2 * time.Second
	}
	return &Client{
		base:  strings.TrimRight(baseURL, "/"),
		codec: codec,
		http: &http.Client{Timeout: opt.Timeout, Transport: otelhttp.NewTransport(
			&http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second},
			// A client span per call whose context reaches the directory as
			// W3C traceparent; named by the internal route, not the raw URL.
			otelhttp.WithPropagators(telemetry.Propagator),
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method + " " + r.URL.Path }),
		)},
		ttl:    opt.CacheTTL,
		cities: map[int64]cached[jobbus.City]{},
		spaces: map[int64]cached[jobbus.Space]{},
		slugs:  map[string]cached[int64]{},
	}
}

// identityHeader signs the service identity once and reuses it while it is
// comfortably valid.
func (c *Client) identityHeader() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.header != "" && time.Now().Before(c.expiry) {
		return c.header, nil
	}
	h, err := c.codec.Sign(identity.Identity{Kind: identity.KindService, Service: "jobs"}, 30*time.Second)
	if err != nil {
		return "", err
	}
	c.header, c.expiry = h, time.Now().Add(20*time.Second)
	return h, nil
}

// envelope is the part of libs/web's envelope a 200 answer is read for.
type envelope struct {
	Data json.RawMessage `json:"data"`
}

// errNotFound is a 404 of the directory.
var errNotFound = errors.New("directory: not found")

func (c *Client) get(ctx context.Context, path string, dst any) error {
	h, err := c.identityHeader()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return fmt.Errorf("directory request: %w", err)
	}
	req.Header.Set(identity.Header, h)
	req.Header.Set("Accept", "application/json")
	// A GET that got no answer at all is sent again, twice at most and
	// within the caller's deadline: during a rolling restart the Service
	// may still send a new connection to a directory pod that has stopped
	// listening (make test-cluster: two job creates answered 503 in 12 246
	// requests), and the next connection goes to another pod.
	var resp *http.Response
	for attempt := range 3 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: %w", jobbus.ErrDirectoryUnavailable, errors.Join(err, ctx.Err()))
			case <-time.After(time.Duration(attempt) * 25 * time.Millisecond):
			}
		}
		if resp, err = c.http.Do(req); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", jobbus.ErrDirectoryUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%w: read: %w", jobbus.ErrDirectoryUnavailable, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return errNotFound
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: GET %s answered %d", jobbus.ErrDirectoryUnavailable, path, resp.StatusCode)
	}
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%w: decode %s: %w", jobbus.ErrDirectoryUnavailable, path, err)
	}
	if err := json.Unmarshal(env.Data, dst); err != nil {
		return fmt.Errorf("%w: decode %s data: %w", jobbus.ErrDirectoryUnavailable, path, err)
	}
	return nil
}

// toCity is the directory's city as the jobs service keeps it.
func toCity(d dirapi.City) jobbus.City {
	return jobbus.City{ID: d.ID, Name: d.Name, Slug: d.Slug, Confirmed: d.Confirmed, Lat: d.Latitude, Lon: d.Longitude,
		CountryCode: d.CountryCode}
}

// City implements jobbus.Directory.
func (c *Client) City(ctx context.Context, id int64) (jobbus.City, bool, error) {
	if v, ok := lookup(c, c.cities, id); ok {
		return v.v, v.ok, nil
	}
	var r dirapi.Resolution
	if err := c.get(ctx, "/internal/cities/resolve?id="+strconv.FormatInt(id, 10), &r); err != nil {
		return jobbus.City{}, false, err
	}
	var city jobbus.City
	found := r.Result == "resolved" && r.City != nil
	if found {
		city = toCity(*r.City)
	}
	store(c, c.cities, id, cached[jobbus.City]{v: city, ok: found})
	return city, found, nil
}

// ResolveCityName implements jobbus.Directory.
func (c *Client) ResolveCityName(ctx context.Context, name string) (jobbus.CityResolution, error) {
	var r dirapi.Resolution
	if err := c.get(ctx, "/internal/cities/resolve?name="+url.QueryEscape(name), &r); err != nil {
		return jobbus.CityResolution{}, err
	}
	out := jobbus.CityResolution{Result: r.Result}
	if r.City != nil {
		out.City = toCity(*r.City)
	}
	for _, cd := range r.Candidates {
		out.Candidates = append(out.Candidates, jobbus.City{ID: cd.ID, Name: cd.Name, Slug: cd.Slug})
	}
	if out.Result == "resolved" && r.City == nil {
		out.Result = "not_found"
	}
	return out, nil
}

// Space implements jobbus.Directory.
func (c *Client) Space(ctx context.Context, id int64) (jobbus.Space, bool, error) {
	if v, ok := lookup(c, c.spaces, id); ok {
		return v.v, v.ok, nil
	}
	var d dirapi.Space
	err := c.get(ctx, "/internal/spaces/"+strconv.FormatInt(id, 10), &d)
	if errors.Is(err, errNotFound) {
		store(c, c.spaces, id, cached[jobbus.Space]{})
		return jobbus.Space{}, false, nil
	}
	if err != nil {
		return jobbus.Space{}, false, err
	}
	sp := jobbus.Space(d)
	store(c, c.spaces, id, cached[jobbus.Space]{v: sp, ok: true})
	return sp, true, nil
}

// SpaceBySlug implements reachapp.SpaceFinder (the embed's look-up), cached
// like the look-ups by id.
func (c *Client) SpaceBySlug(ctx context.Context, slug string) (jobbus.Space, bool, error) {
	c.mu.Lock()
	id, known := c.slugs[slug]
	c.mu.Unlock()
	if known && time.Now().Before(id.until) {
		if !id.ok {
			return jobbus.Space{}, false, nil
		}
		return c.Space(ctx, id.v)
	}
	var d dirapi.Space
	err := c.get(ctx, "/internal/spaces/by-slug/"+url.PathEscape(slug), &d)
	if err != nil && !errors.Is(err, errNotFound) {
		return jobbus.Space{}, false, err
	}
	found := err == nil
	sp := jobbus.Space(d)
	if c.ttl > 0 {
		if found {
			store(c, c.spaces, sp.ID, cached[jobbus.Space]{v: sp, ok: true})
		}
		c.mu.Lock()
		if len(c.slugs) > 50000 {
			clear(c.slugs)
		}
		c.slugs[slug] = cached[int64]{v: sp.ID, ok: found, until: time.Now().Add(c.ttl)}
		c.mu.Unlock()
	}
	return sp, found, nil
}

// Catalog reads the directory's catalog (seeders and generators).
func (c *Client) Catalog(ctx context.Context) (dirapi.Catalog, error) {
	var cat dirapi.Catalog
	err := c.get(ctx, "/internal/catalog", &cat)
	return cat, err
}

func lookup[T any](c *Client, m map[int64]cached[T], id int64) (cached[T], bool) {
	if c.ttl <= 0 {
		return cached[T]{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := m[id]
	if !ok || time.Now().After(v.until) {
		return cached[T]{}, false
	}
	return v, true
}

func store[T any](c *Client, m map[int64]cached[T], id int64, v cached[T]) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(m) > 50000 {
		clear(m)
	}
	v.until = time.Now().Add(c.ttl)
	m[id] = v
}
