// Package jobbus holds the rules of job postings: validation and
// normalisation of a create request, the initial status, fingerprint dedupe,
// idempotent replays, listing filters and unpublishing. It declares the
// storage and directory look-ups it needs as interfaces.
package jobbus

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Job statuses.
const (
	StatusDraft   = "draft"
	StatusActive  = "active"
	StatusExpired = "expired"
	StatusPaused  = "paused"
	StatusClosed  = "closed"
)

// Actions of a create and of an unpublish.
const (
	ActionCreated            = "created"
	ActionUpdated            = "updated"
	ActionUnpublished        = "unpublished"
	ActionAlreadyUnpublished = "already_unpublished"
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
	ErrNotFound             = errors.New("not found")
	ErrForbidden            = errors.New("forbidden")
	ErrSpaceConflict        = errors.New("id_space conflicts with the key's space")
	ErrInFlight             = errors.New("a request with this idempotency key is in progress")
	ErrIdempotencyMismatch  = errors.New("idempotency key reused with a different request")
	ErrDirectoryUnavailable = errors.New("directory unavailable")
)

// ValidationError lists every problem of a request.
type ValidationError struct{ Problems []string }

func (e *ValidationError) Error() string {
	return "validation failed: " + strings.Join(e.Problems, "; ")
}

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
	Price          int
	ExpirationDays int
	Active         bool
}

// City is the directory's fact about a city.
type City struct {
	ID        int64
	Name      string
	Slug      string
	Confirmed bool
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

	TypeProblems []string
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
	SalMin, SalMax                       *int64
	Currency                             string
	InvEmail                             string
	Plan                                 Plan
	Status                               string // initial status for an insert
	Fingerprint                          string
	HashIdentifier                       string
}

// Idempotency is the Idempotency-Key part of a create.
type Idempotency struct {
	KeyID       int64
	Key         string
	RequestHash string
}

// StoredResponse is a recorded answer replayed for an idempotent retry.
type StoredResponse struct {
	RequestHash string
	Status      int
	Body        []byte
	CreatedAt   time.Time
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
}

// CreateResult is the job creation result.
type CreateResult struct {
	JobID          int64
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

// Renderer turns a create result into the stored response (status and
// body), so that the idempotency record commits with the job.
type Renderer func(CreateResult) (status int, body []byte, err error)

// UnpublishResult is the answer of an unpublish.
type UnpublishResult struct {
	JobID  int64
	Status string
	Action string
}

// ListFilter selects the jobs of a listing.
type ListFilter struct {
	Query    string // already lowercased, LIKE wildcards not yet escaped
	JobType  string
	Remote   bool
	CitySlug string
	SpaceID  int64 // 0: any space
	Limit    int   // 0: no limit
	Offset   int
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
	Description    string // only filled for the feed
}

// PageURL is the job's slug with its id, unique and stable.
func PageURL(slug string, id int64) string { return fmt.Sprintf("%s-%d", slug, id) }
