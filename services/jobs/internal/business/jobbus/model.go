// Package jobbus holds the rules of job postings: validation and
// normalisation of a create request, the initial status, fingerprint dedupe,
// idempotent replays, listing filters and unpublishing. It declares the
// storage and directory look-ups it needs as interfaces.
package jobbus

import (
	"errors"
	"fmt"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/geo"
)

// Job statuses.
const (
	StatusDraft   = "draft"
	StatusActive  = "active"
	StatusExpired = "expired"
	StatusPaused  = "paused"
	StatusClosed  = "closed"
)

// Actions: what a create or a transition did (docs/job-lifecycle.md).
// A transition that changes nothing answers "already_<state>".
const (
	ActionCreated            = "created"
	ActionUpdated            = "updated"
	ActionPublished          = "published"
	ActionPaused             = "paused"
	ActionResumed            = "resumed"
	ActionRelisted           = "relisted"
	ActionClosed             = "closed"
	ActionUnpublished        = "unpublished"
	ActionAlreadyUnpublished = "already_unpublished"
	ActionExpired            = "expired"
	ActionNotDue             = "not_due"
	ActionPaid               = "paid"     // a payment settled a live job's bill
	ActionRecorded           = "recorded" // a payment changed nothing but was kept
	ActionReplayed           = "already_recorded"
)

// Limits of a create request.
const (
	DefaultPlanID     = 5
	DefaultCurrency   = "EUR"
	MaxTitleLen       = 200
	MaxCompanyLen     = 200
	MaxDescriptionLen = 50000
	MaxTags           = 20
	MaxTagLen         = 50
	MaxURLLen         = 2000
	MaxCityNameLen    = 200
	MaxSalary         = 100_000_000
	MaxIdemKeyLen     = 200
	MaxExternalRefLen = 200
	IdempotencyTTL    = 24 * time.Hour
)

// JobTypes are the accepted job_type values.
var JobTypes = []string{"fulltime", "parttime", "freelance", "internship"}

// Currencies are the accepted currency values.
var Currencies = []string{"EUR", "USD", "GBP"}

// ValidJobType reports whether t is one of JobTypes.
func ValidJobType(t string) bool {
	for _, v := range JobTypes {
		if v == t {
			return true
		}
	}
	return false
}

// Sentinel errors the handlers map to envelope codes.
var (
	ErrNotFound      = errors.New("not found")
	ErrForbidden     = errors.New("forbidden")
	ErrSpaceConflict = errors.New("id_space conflicts with the key's space")
	// ErrSpaceNotGranted is a key without a space naming a space it may not
	// post into: only a trusted importer may.
	ErrSpaceNotGranted      = errors.New("id_space is not granted to this key")
	ErrInFlight             = errors.New("a request with this idempotency key is in progress")
	ErrIdempotencyMismatch  = errors.New("idempotency key reused with a different request")
	ErrDirectoryUnavailable = errors.New("directory unavailable")
	// ErrDuplicate is an edit that would give a job the fingerprint of
	// another job of the same owner.
	ErrDuplicate = errors.New("another job of this poster has the same title, company, city and URL")
	// ErrStale is a change whose job left the state it was decided from.
	ErrStale = errors.New("the job changed while the change was decided")
)

// Caller is who makes a request, as the gateway signed it.
type Caller struct {
	KeyID           int64
	SpaceID         int64 // 0: the key is not scoped to a space
	TrustedImporter bool
}

// Plan is a listing plan: what it costs and how long a job stays up.
type Plan struct {
	ID             int
	Name           string
	Price          int    // whole units of Currency
	Currency       string // ISO 4217
	ExpirationDays int
	Active         bool
}

// City is the directory's fact about a city.
type City struct {
	ID        int64
	Name      string
	Slug      string
	Confirmed bool
	// Lat and Lon place the city's jobs for near= (WGS 84 degrees).
	Lat, Lon float64
	// CountryCode is ISO 3166-1 alpha-2 ("" when unknown).
	CountryCode string
}

// Space is the directory's fact about a coworking space.
type Space struct {
	ID        int64
	Name      string
	Slug      string
	Confirmed bool
	IsPro     bool
	CityID    int64
}

// CityResolution is the answer to a city-name look-up.
type CityResolution struct {
	Result     string // resolved, ambiguous, not_found
	City       City
	Candidates []City
}

// CreateInput is a create request after JSON decoding. Absent fields are
// nil; TypeProblems lists the fields whose JSON type was wrong, so that they
// are reported together with the rule problems.
type CreateInput struct {
	Title       *string
	Company     *string
	Description *string
	JobType     *string
	Tags        *string
	IDCity      *int64
	CityName    *string
	ExternalURL *string
	ApplyURL    *string
	IsRemote    *int64
	InvEmail    *string
	Currency    *string
	SalMin      *int64
	SalMax      *int64
	IDSpace     *int64
	IDPlan      *int64
	// SalaryPeriod and WorkplaceType: nil is the default (year; from
	// is_remote).
	SalaryPeriod  *string
	WorkplaceType *string
	// ExternalRef is the importer's reference: given, it (not the
	// fingerprint) decides create or update.
	ExternalRef *string

	TypeProblems []string
	// fromSource: a row of an import source's poll (ApplySource), whose
	// reference carries the source's prefix.
	fromSource bool
}

// NewJob is a create request that passed every rule, ready to store.
type NewJob struct {
	Title, Company, Description, JobType string
	Tags                                 string
	IsRemote                             bool
	Slug                                 string
	ExternalURL                          string
	ApplyURL                             *string
	City                                 City
	SpaceID                              int64
	SpaceName                            *string
	KeyID                                int64
	// OwnerKeyID names the fingerprint's namespace within SpaceID: 0 for
	// a space key's job (the space owns it), the key for a key without a
	// space (OwnerOf).
	OwnerKeyID int64
	// PlanGiven: the request named its plan; an update without one keeps
	// the job's.
	PlanGiven      bool
	SalMin, SalMax *int64
	Currency       string
	SalaryPeriod   string
	WorkplaceType  string
	InvEmail       string
	Plan           Plan
	Status         string // initial status for an insert
	// UpdateFrom[i] → UpdateTo[i] are the status moves of a fingerprint
	// update for this caller, Refresh the states whose plan and expiration
	// it refreshes (UpdateMoves).
	UpdateFrom, UpdateTo, Refresh []string
	Fingerprint                   string
	HashIdentifier                string
	// ExternalRef, when set, matches the owner's job to update instead of
	// Fingerprint.
	ExternalRef *string
}

// Idempotency is the Idempotency-Key part of a create.
type Idempotency struct {
	KeyID       int64
	Key         string
	RequestHash string
	// Render is the reply a create is answered with (its status and body):
	// it is stored with the job, and a retry is answered with it as it was.
	Render func(CreateResult) (status int, body []byte, err error)
}

// Reply is a create's answer under an Idempotency-Key, as Render made it.
type Reply struct {
	Status int
	Body   []byte
	// Replayed: the answer recorded for an earlier request with the key.
	Replayed bool
}

// StoredResponse is a recorded answer replayed for an idempotent retry.
type StoredResponse struct {
	RequestHash string
	Status      int
	Body        []byte
	CreatedAt   time.Time
	// Owed: some committed write is not announced to the caches yet (the
	// store's to settle; see ErrUnannounced).
	Owed bool
}

// Written is what the store reports after an upsert.
type Written struct {
	JobID          int64
	HashIdentifier string
	Slug           string
	Status         string
	Inserted       bool
	IsPaid         bool
	ExpirationDate time.Time
	ApplyURL       *string
	City           City
	Plan           Plan
	// Wrote: a row was inserted or changed (an unchanged match writes
	// nothing); Owed: some committed write is not announced yet.
	Wrote, Owed bool
}

// CreateResult is the job creation result.
type CreateResult struct {
	JobID          int64
	ExternalRef    *string
	PageURL        string
	HashIdentifier string
	Status         string
	Action         string
	DedupeHash     string
	IsPaid         bool
	City           City
	ApplyURL       *string
	PlanPrice      int
	ExpirationDays int
	Message        string
	ViewURL        *string
	PaymentURL     *string
	EditURL        string
	UnpublishURL   string
}

// ListFilter selects the jobs of a listing.
type ListFilter struct {
	Search  Search // empty: no q
	Sort    string // SortRelevance or SortNewest
	JobType string
	Remote  bool
	// WorkplaceType keeps the jobs worked so ("": any).
	WorkplaceType string
	CitySlug      string
	SpaceID       int64 // 0: any space
	// SalaryMin keeps the jobs whose salary range reaches it, in Currency,
	// a year: each job's range annualised (PeriodsPerYear).
	SalaryMin   *int64
	Currency    string
	Tag         string    // one normalised tag
	PostedSince time.Time // zero: any date
	// Near keeps the jobs whose city lies within its radius; each then
	// carries its distance.
	Near *geo.Near
	// JobIDs, when set, keeps only these jobs: an alert's match is whether
	// its search lists the job (alertbus), decided by this same statement.
	JobIDs []int64
	Limit  int // 0: no limit
	Offset int
	// Reader is whose listing it is (what it must see).
	Reader Reader
}

// Reader is who reads, which says what a read must see. The zero value is
// an anonymous reader, who may be shown any committed state of the jobs a
// moment old; a key's reads see at least the writes acknowledged to that
// key; Latest reads see every committed write; Lock, in a transaction, also
// locks the job for a decision (a transition's), which the store announces
// after commit (the decision may be the retry of one that committed and
// failed to announce).
type Reader struct {
	KeyID        int64
	Latest, Lock bool
}

// Job is one listed job (the row of GET /v2/jobs).
type Job struct {
	ID             int64
	Title          string
	Company        string
	JobType        string
	Tags           string
	IsRemote       bool
	Slug           string
	ExternalURL    string
	ApplyURL       *string
	CompanyLogo    string
	DateAdded      time.Time
	ExpirationDate time.Time
	CityName       string
	CitySlug       string
	SpaceName      *string
	SalMin         *int64
	SalMax         *int64
	Currency       string
	SalaryPeriod   string
	WorkplaceType  string
	ExternalRef    *string   // the importer's reference, nil for none
	Description    string    // the feeds and one job only
	UpdatedAt      time.Time // the feeds and one job only
	// DistanceKm is the distance of the job's city to ListFilter.Near.
	DistanceKm *float64
}

// Detail is one job with everything about it: GET /v2/jobs/{id_job}, the
// pages, the mails and the payments read it.
type Detail struct {
	Job
	CityID      int64
	CityCountry string // ISO 3166-1 alpha-2, "" when unknown
	// Version counts the job's changes (each writes one event or more).
	Version        int64
	SpaceID        int64 // 0: the job belongs to no space
	KeyID          int64 // the key that created it
	Status         string
	Plan           Plan
	IsPaid         bool
	PausedAt       *time.Time
	InvEmail       string
	HashIdentifier string
}

// Links are a job's public URLs. ViewURL is set while the job is publicly
// visible, PaymentURL while a payment is due.
type Links struct {
	URL, EditURL, UnpublishURL string
	ViewURL, PaymentURL        *string
}

// EditInput is an edit from the poster's page; nil fields are unchanged.
type EditInput struct {
	Title, Company, Description, JobType, Tags, ApplyURL, Currency *string
	IsRemote                                                       *int64
	SalMin, SalMax                                                 *int64
	SalaryPeriod, WorkplaceType                                    *string
	// ClearSalary removes the salary when SalMin and SalMax are both nil.
	ClearSalary bool
}

// PageURL is the job's slug with its id, unique and stable.
func PageURL(slug string, id int64) string { return fmt.Sprintf("%s-%d", slug, id) }
