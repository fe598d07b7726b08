// Package routes is the gateway's route table: every route with its backend,
// the scopes that grant it, the budget it spends and what its answer depends
// on (the response cache's rule). The gateway enforces it and GET /v2 lists it.
package routes

import (
	"time"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// Cached says what a GET's answer depends on, so that the gateway can name
// it (ETag) and cache it without running the query behind it: the change
// versions of Scopes (libs/changes), the request (path and query), the key
// (a key's view is its own: its space, its drafts), and for answers that
// change with time alone (a scheduled post, an event that started) the
// current Bucket of that length.
type Cached struct {
	Scopes func(spaceID int64) []string
	Bucket time.Duration
}

func fixed(s ...string) func(int64) []string { return func(int64) []string { return s } }

// What the cacheable GETs depend on. The blog's and the events' lists
// change with time alone too (a post scheduled for later appears, an event
// that started leaves "upcoming"), so their names last one minute at most.
// A job's expiry is a write (the expiry worker bumps the versions), so the
// job routes have no bucket.
var (
	cacheJobs      = &Cached{Scopes: scopes.JobsListed}
	cacheJob       = &Cached{Scopes: fixed(scopes.Jobs)}
	cacheDirectory = &Cached{Scopes: fixed(scopes.Directory)}
	cacheBlog      = &Cached{Scopes: fixed(scopes.Blog), Bucket: time.Minute}
	cacheEvents    = &Cached{Scopes: fixed(scopes.Events), Bucket: time.Minute}
)

// Backends the gateway routes to.
const (
	BackendJobs      = "jobs"
	BackendDirectory = "directory"
	BackendContent   = "content"
	BackendCommunity = "community"
	Local            = "" // answered by the gateway itself
)

// Limit classes.
const (
	LimitNone     = ""
	LimitKeyWrite = "key_write" // the spec's write limit, per API key
	LimitPublicIP = "public_ip" // spam guard on public POSTs, per client IP
	// Reads (the spec leaves their limits open): a budget per key for keyed
	// GETs and per client IP for public backend GETs, far above what a site
	// or a platform needs, so one client cannot starve the others.
	LimitKeyRead    = "key_read"
	LimitPublicRead = "public_read"
)

// Route is one line of the route table: the spec's Auth column, written once.
// The gateway enforces it and GET /v2 lists it.
type Route struct {
	Method  string
	Path    string
	Backend string
	// Scopes: any one of them grants access; nil means public.
	Scopes []string
	// KeyScopes, on a public route, makes a key optional: without one the
	// request is public (per-IP budget); with one the key must be valid (401)
	// and hold one of these (403), the backend is told of it and the key's
	// write budget applies.
	KeyScopes []string
	// Write routes refuse svc_rstr_ keys whatever their scopes.
	Write   bool
	Limit   string
	Summary string
	// Page marks an HTML page (Pages): its Cookie header reaches the backend
	// (the poster's forms carry a CSRF cookie), and the gateway's own errors
	// on it are HTML too.
	Page bool
	// Cache names and caches the answers of a GET (nil: never; see Cached).
	Cache *Cached
	// Batch: the request's rows (its body's "jobs") spend the write budget,
	// BATCH_ROWS_PER_WRITE rows a unit (budget.Cost).
	Batch bool
}

// Public reports whether the route needs no key.
func (r Route) Public() bool { return r.Scopes == nil }

// Scope sets of the spec. jobs:write grants reading jobs too ("another scope
// granting read"); write implies read everywhere.
var (
	jobsRead    = []string{keybus.ScopeJobsRead, keybus.ScopeJobsWrite, keybus.ScopeRead, keybus.ScopeWrite}
	jobsWrite   = []string{keybus.ScopeJobsWrite, keybus.ScopeWrite}
	citiesRead  = []string{keybus.ScopeCitiesRead, keybus.ScopeRead, keybus.ScopeWrite}
	spacesRead  = []string{keybus.ScopeSpacesRead, keybus.ScopeRead, keybus.ScopeWrite}
	eventsRead  = []string{keybus.ScopeEventsRead, keybus.ScopeRead, keybus.ScopeWrite}
	broadRead   = []string{keybus.ScopeRead, keybus.ScopeWrite}
	keysManage  = []string{keybus.ScopeKeysManage}
	webhooks    = []string{keybus.ScopeWebhooks}
	alertsWrite = []string{keybus.ScopeAlertsWrite}
	publicRoute []string
)

// Table is every public route of the API.
var Table = []Route{
	{Method: "GET", Path: "/v2", Backend: Local, Scopes: publicRoute, Summary: "API information and routes"},
	{Method: "GET", Path: "/v2/health", Backend: Local, Scopes: broadRead, Limit: LimitKeyRead, Summary: "Service health"},
	{Method: "GET", Path: "/v2/openapi.json", Backend: Local, Scopes: publicRoute, Summary: "OpenAPI document (JSON)"},
	{Method: "GET", Path: "/v2/openapi.yaml", Backend: Local, Scopes: publicRoute, Summary: "OpenAPI document (YAML)"},
	{Method: "GET", Path: "/v2/docs", Backend: Local, Scopes: publicRoute, Summary: "API reference page"},

	// The key API, answered by the gateway (keyapp); restricted keys are
	// refused by the key rules on the reads too.
	{Method: "GET", Path: "/v2/keys", Backend: Local, Scopes: keysManage, Limit: LimitKeyRead, Summary: "List the keys this key manages"},
	{Method: "POST", Path: "/v2/keys", Backend: Local, Scopes: keysManage, Write: true, Limit: LimitKeyWrite, Summary: "Create a key"},
	{Method: "GET", Path: "/v2/keys/events", Backend: Local, Scopes: keysManage, Limit: LimitKeyRead, Summary: "The audit log of key events"},
	{Method: "GET", Path: "/v2/keys/:id<int>", Backend: Local, Scopes: keysManage, Limit: LimitKeyRead, Summary: "One key"},
	{Method: "DELETE", Path: "/v2/keys/:id<int>", Backend: Local, Scopes: keysManage, Write: true, Limit: LimitKeyWrite, Summary: "Revoke a key"},
	{Method: "POST", Path: "/v2/keys/:id<int>/rotate", Backend: Local, Scopes: keysManage, Write: true, Limit: LimitKeyWrite, Summary: "Replace a key, the old one working for a grace period"},

	{Method: "GET", Path: "/v2/jobs", Backend: BackendJobs, Scopes: jobsRead, Limit: LimitKeyRead, Summary: "List active jobs", Cache: cacheJobs},
	{Method: "POST", Path: "/v2/jobs", Backend: BackendJobs, Scopes: jobsWrite, Write: true, Limit: LimitKeyWrite, Summary: "Create or update a job"},
	{Method: "POST", Path: "/v2/jobs/batch", Backend: BackendJobs, Scopes: jobsWrite, Write: true, Limit: LimitKeyWrite, Batch: true, Summary: "Create, update and close an importer's jobs in bulk"},
	// Not cached: an operation moves without a job write being announced.
	{Method: "GET", Path: "/v2/jobs/batch/:operation_id", Backend: BackendJobs, Scopes: jobsRead, Limit: LimitKeyRead, Summary: "A batch operation's progress and results"},
	// Not cached: a page ends at the server's commit horizon, which moves without any job write.
	// Import sources (issue 46): the batch route's scopes (a source writes
	// jobs as a batch does); never cached, a poll moves them without a
	// request.
	{Method: "POST", Path: "/v2/import/sources", Backend: BackendJobs, Scopes: jobsWrite, Write: true, Limit: LimitKeyWrite, Summary: "Register a feed to import jobs from"},
	{Method: "GET", Path: "/v2/import/sources", Backend: BackendJobs, Scopes: jobsRead, Limit: LimitKeyRead, Summary: "List the key's import sources"},
	{Method: "GET", Path: "/v2/import/sources/:id_source", Backend: BackendJobs, Scopes: jobsRead, Limit: LimitKeyRead, Summary: "One import source with its last run"},
	{Method: "DELETE", Path: "/v2/import/sources/:id_source", Backend: BackendJobs, Scopes: jobsWrite, Write: true, Limit: LimitKeyWrite, Summary: "Delete an import source"},
	{Method: "GET", Path: "/v2/import/sources/:id_source/runs", Backend: BackendJobs, Scopes: jobsRead, Limit: LimitKeyRead, Summary: "An import source's runs"},
	{Method: "POST", Path: "/v2/import/sources/:id_source/sync", Backend: BackendJobs, Scopes: jobsWrite, Write: true, Limit: LimitKeyWrite, Summary: "Poll an import source now"},
	{Method: "GET", Path: "/v2/jobs/changes", Backend: BackendJobs, Scopes: jobsRead, Limit: LimitKeyRead, Summary: "The changes of jobs, for mirrors"},
	{Method: "GET", Path: "/v2/jobs/:id_job<int>", Backend: BackendJobs, Scopes: jobsRead, Limit: LimitKeyRead, Summary: "One job with its description", Cache: cacheJob},
	{Method: "POST", Path: "/v2/jobs/unpublish", Backend: BackendJobs, Scopes: jobsWrite, Write: true, Limit: LimitKeyWrite, Summary: "Unpublish a job"},
	{Method: "POST", Path: "/v2/jobs/publish", Backend: BackendJobs, Scopes: jobsWrite, Write: true, Limit: LimitKeyWrite, Summary: "Publish a draft"},
	{Method: "POST", Path: "/v2/jobs/pause", Backend: BackendJobs, Scopes: jobsWrite, Write: true, Limit: LimitKeyWrite, Summary: "Pause an active job"},
	{Method: "POST", Path: "/v2/jobs/resume", Backend: BackendJobs, Scopes: jobsWrite, Write: true, Limit: LimitKeyWrite, Summary: "Resume a paused job"},
	{Method: "POST", Path: "/v2/jobs/relist", Backend: BackendJobs, Scopes: jobsWrite, Write: true, Limit: LimitKeyWrite, Summary: "Relist an expired job"},
	{Method: "POST", Path: "/v2/jobs/close", Backend: BackendJobs, Scopes: jobsWrite, Write: true, Limit: LimitKeyWrite, Summary: "Close a filled position"},
	// Job statistics (issue 47): never cached, the numbers move every second.
	{Method: "GET", Path: "/v2/jobs/:id_job<int>/stats", Backend: BackendJobs, Scopes: jobsRead, Limit: LimitKeyRead, Summary: "A job's views, apply clicks and impressions"},
	{Method: "GET", Path: "/v2/stats", Backend: BackendJobs, Scopes: jobsRead, Limit: LimitKeyRead, Summary: "Totals and top jobs of the key's jobs"},
	{Method: "GET", Path: "/v2/vine/jobs", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "Jobs feed", Cache: cacheJob},
	// Stripe signs its events instead of sending a key; not limited, since
	// Stripe sends bursts (retries after an outage) from few addresses and an
	// unsigned request costs the jobs service one HMAC.
	{Method: "POST", Path: "/v2/payments/stripe/webhook", Backend: BackendJobs, Scopes: publicRoute, Summary: "Stripe's payment notifications"},

	// Webhook endpoints: every route reveals or changes an endpoint (its deliveries show what was sent), so all are writes.
	{Method: "POST", Path: "/v2/webhooks", Backend: BackendJobs, Scopes: webhooks, Write: true, Limit: LimitKeyWrite, Summary: "Register a webhook endpoint"},
	{Method: "GET", Path: "/v2/webhooks", Backend: BackendJobs, Scopes: webhooks, Write: true, Limit: LimitKeyRead, Summary: "List webhook endpoints"},
	{Method: "GET", Path: "/v2/webhooks/:id_webhook", Backend: BackendJobs, Scopes: webhooks, Write: true, Limit: LimitKeyRead, Summary: "One webhook endpoint"},
	{Method: "PATCH", Path: "/v2/webhooks/:id_webhook", Backend: BackendJobs, Scopes: webhooks, Write: true, Limit: LimitKeyWrite, Summary: "Change a webhook endpoint"},
	{Method: "DELETE", Path: "/v2/webhooks/:id_webhook", Backend: BackendJobs, Scopes: webhooks, Write: true, Limit: LimitKeyWrite, Summary: "Delete a webhook endpoint"},
	{Method: "POST", Path: "/v2/webhooks/:id_webhook/rotate-secret", Backend: BackendJobs, Scopes: webhooks, Write: true, Limit: LimitKeyWrite, Summary: "Rotate an endpoint's secret"},
	{Method: "POST", Path: "/v2/webhooks/:id_webhook/ping", Backend: BackendJobs, Scopes: webhooks, Write: true, Limit: LimitKeyWrite, Summary: "Send a test event"},
	{Method: "GET", Path: "/v2/webhooks/:id_webhook/deliveries", Backend: BackendJobs, Scopes: webhooks, Write: true, Limit: LimitKeyRead, Summary: "An endpoint's deliveries"},
	{Method: "POST", Path: "/v2/webhooks/:id_webhook/deliveries/:id_delivery/redeliver", Backend: BackendJobs, Scopes: webhooks, Write: true, Limit: LimitKeyWrite, Summary: "Deliver a message again"},
	{Method: "POST", Path: "/v2/webhooks/:id_webhook/recover", Backend: BackendJobs, Scopes: webhooks, Write: true, Limit: LimitKeyWrite, Summary: "Deliver every event since a time again"},

	// Job alerts: public and limited per IP as the newsletter; the links'
	// tokens are the capability. A platform key with alerts:write may save
	// alerts for its users (the alert records the key; the seeker confirms).
	{Method: "POST", Path: "/v2/alerts", Backend: BackendJobs, Scopes: publicRoute, KeyScopes: alertsWrite, Write: true, Limit: LimitPublicIP, Summary: "Save a job alert"},
	{Method: "GET", Path: "/v2/alerts/confirm", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "Confirm a job alert (link form)"},
	{Method: "POST", Path: "/v2/alerts/confirm", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Summary: "Confirm a job alert"},
	{Method: "GET", Path: "/v2/alerts/manage", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "A job alert, by its management link"},
	{Method: "POST", Path: "/v2/alerts/manage", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Summary: "Change or pause a job alert"},
	{Method: "GET", Path: "/v2/alerts/unsubscribe", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "Delete a job alert (link form)"},
	{Method: "POST", Path: "/v2/alerts/unsubscribe", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Summary: "Delete a job alert (RFC 8058 one-click)"},
	{Method: "GET", Path: "/v2/alerts/feed", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "A job alert's feed of its matches"},
	// An address's erasure across alerts and newsletter (docs/privacy.md):
	// the link of every mail; its token is the capability. The GET is a page
	// with a button, so a mail scanner's prefetch erases nothing.
	{Method: "GET", Path: "/v2/privacy/erase", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "The erasure page of an address (HTML)"},
	{Method: "POST", Path: "/v2/privacy/erase", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Summary: "Erase an address everywhere"},

	{Method: "GET", Path: "/v2/cities", Backend: BackendDirectory, Scopes: citiesRead, Limit: LimitKeyRead, Summary: "Confirmed cities", Cache: cacheDirectory},
	{Method: "GET", Path: "/v2/spaces", Backend: BackendDirectory, Scopes: spacesRead, Limit: LimitKeyRead, Summary: "Confirmed spaces", Cache: cacheDirectory},
	{Method: "GET", Path: "/v2/city_spaces", Backend: BackendDirectory, Scopes: spacesRead, Limit: LimitKeyRead, Summary: "Spaces with city metadata", Cache: cacheDirectory},

	{Method: "GET", Path: "/v2/blog", Backend: BackendContent, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "Blog posts", Cache: cacheBlog},
	{Method: "GET", Path: "/v2/vine/blog", Backend: BackendContent, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "Blog feed", Cache: cacheBlog},

	{Method: "GET", Path: "/v2/events", Backend: BackendCommunity, Scopes: eventsRead, Limit: LimitKeyRead, Summary: "Events", Cache: cacheEvents},
	{Method: "GET", Path: "/v2/vine/events", Backend: BackendCommunity, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "Events feed", Cache: cacheEvents},
	{Method: "POST", Path: "/v2/feedback", Backend: BackendCommunity, Scopes: publicRoute, Limit: LimitPublicIP, Summary: "Send feedback"},
	{Method: "POST", Path: "/v2/newsletters/subscribe", Backend: BackendCommunity, Scopes: publicRoute, Limit: LimitPublicIP, Summary: "Subscribe to the newsletter"},
	{Method: "GET", Path: "/v2/newsletters/confirm", Backend: BackendCommunity, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "Confirm a subscription (link form)"},
	{Method: "POST", Path: "/v2/newsletters/confirm", Backend: BackendCommunity, Scopes: publicRoute, Limit: LimitPublicIP, Summary: "Confirm a subscription"},
	{Method: "GET", Path: "/v2/newsletters/unsubscribe", Backend: BackendCommunity, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "Unsubscribe (link form)"},
	{Method: "POST", Path: "/v2/newsletters/unsubscribe", Backend: BackendCommunity, Scopes: publicRoute, Limit: LimitPublicIP, Summary: "Unsubscribe"},

	// Outside /v2, for crawlers, aggregators and space websites: machine
	// answers (XML, a script) with the API's errors, named by the jobs'
	// versions like the feed.
	{Method: "GET", Path: "/robots.txt", Backend: Local, Scopes: publicRoute, Summary: "Crawling rules, naming the sitemap"},
	{Method: "GET", Path: "/sitemap.xml", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "Sitemap of the job pages", Cache: cacheJob},
	{Method: "GET", Path: "/feeds/jobs.xml", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "Jobs for aggregators (Indeed, Jooble)", Cache: cacheJob},
	{Method: "GET", Path: "/embed/jobs.js", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Summary: "A space's jobs for its own website", Cache: cacheJob},
}

// Pages are the HTML pages behind a job's links (docs/job-lifecycle.md),
// rendered by the jobs service. They are not the API: GET /v2 does not list
// them and the OpenAPI document does not describe them. Public, limited per
// client IP: reads on the public read budget, form posts on the spam guard.
// The static paths come before /jobs/:page, which would match them too.
var Pages = []Route{
	// The space dashboard (dashapp), answered by the gateway: sign-in by a
	// mailed link, then the space's jobs and keys.
	{Method: "GET", Path: "/dashboard", Backend: Local, Scopes: publicRoute, Limit: LimitPublicRead, Page: true, Summary: "The dashboard: sign-in form or your spaces"},
	{Method: "POST", Path: "/dashboard/sign-in", Backend: Local, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Ask for a sign-in link"},
	{Method: "GET", Path: "/dashboard/sign-in/link", Backend: Local, Scopes: publicRoute, Limit: LimitPublicRead, Page: true, Summary: "A sign-in link's page"},
	{Method: "POST", Path: "/dashboard/sign-in/link", Backend: Local, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Sign in with the link"},
	{Method: "POST", Path: "/dashboard/sign-out", Backend: Local, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Sign out"},
	{Method: "GET", Path: "/dashboard/assets/:file", Backend: Local, Scopes: publicRoute, Page: true, Summary: "The dashboard's style and script"},
	{Method: "GET", Path: "/dashboard/spaces/:id<int>", Backend: Local, Scopes: publicRoute, Limit: LimitPublicRead, Page: true, Summary: "A space's jobs, keys and import sources"},
	{Method: "POST", Path: "/dashboard/spaces/:id<int>/jobs/:job<int>/:action", Backend: Local, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Act on a job of the space"},
	{Method: "POST", Path: "/dashboard/spaces/:id<int>/keys", Backend: Local, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Create a key of the space"},
	{Method: "POST", Path: "/dashboard/spaces/:id<int>/keys/:key<int>/revoke", Backend: Local, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Revoke a key of the space"},
	{Method: "POST", Path: "/dashboard/spaces/:id<int>/keys/:key<int>/replace", Backend: Local, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Replace a key of the space"},
	{Method: "POST", Path: "/dashboard/spaces/:id<int>/imports", Backend: Local, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Add an import source of the space"},
	{Method: "POST", Path: "/dashboard/spaces/:id<int>/imports/:src<int>/:action", Backend: Local, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Sync or delete an import source of the space"},

	// A job alert's pages, behind its mails' links (the token is the
	// capability); the one-click unsubscribe POSTs to /alerts/unsubscribe.
	{Method: "GET", Path: "/alerts/confirm", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Page: true, Summary: "Confirm a job alert: the page"},
	{Method: "POST", Path: "/alerts/confirm", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Confirm a job alert"},
	{Method: "GET", Path: "/alerts/manage", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Page: true, Summary: "A job alert's page"},
	{Method: "POST", Path: "/alerts/manage", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Change, pause or resume a job alert"},
	{Method: "GET", Path: "/alerts/unsubscribe", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Page: true, Summary: "Delete a job alert: the page"},
	{Method: "POST", Path: "/alerts/unsubscribe", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Delete a job alert (the button, or RFC 8058 one-click)"},

	// The apply links of pages, feeds, embeds and mails: counts the click
	// and redirects (302) to the job's own apply address.
	{Method: "GET", Path: "/go/:ref", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Page: true, Summary: "An apply link: counted, then redirected"},

	{Method: "GET", Path: "/jobs/edit", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Page: true, Summary: "The poster's page of a job"},
	{Method: "POST", Path: "/jobs/edit", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Save the poster's edit"},
	{Method: "POST", Path: "/jobs/publish", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Publish a draft from its page"},
	{Method: "POST", Path: "/jobs/pause", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Pause a job from its page"},
	{Method: "POST", Path: "/jobs/resume", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Resume a job from its page"},
	{Method: "POST", Path: "/jobs/relist", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Relist an expired job from its page"},
	{Method: "GET", Path: "/jobs/unpublish", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Page: true, Summary: "Confirm unpublishing"},
	{Method: "POST", Path: "/jobs/unpublish", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Unpublish from the page"},
	{Method: "GET", Path: "/jobs/pay", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Page: true, Summary: "The payment page"},
	{Method: "POST", Path: "/jobs/pay", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicIP, Page: true, Summary: "Start the payment"},
	{Method: "GET", Path: "/jobs/:page", Backend: BackendJobs, Scopes: publicRoute, Limit: LimitPublicRead, Page: true, Summary: "The public job page"},
}
