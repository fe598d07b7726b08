package jobbus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Stores are the storage the rules need, one interface per concern (as
// ardanlabs keeps a Storer per domain): they persist what the rules decided;
// they do not decide. One store may implement all of them (jobdb.Store,
// jobcache.Store: their Stores method).
type Stores struct {
	Tx      Transactor
	Jobs    JobStorer
	Idem    IdempotencyStorer
	Lists   ListStorer
	Batches BatchStorer
	Events  EventStorer
}

// Transactor runs the rules' writes that must commit together.
type Transactor interface {
	// InTx runs fn with stores bound to one transaction (a nested call: the
	// same one), committed when fn returns nil and rolled back otherwise.
	InTx(ctx context.Context, fn func(Stores) error) error
}

// JobStorer keeps one job through its lifecycle: its writes and the reads
// its decisions are made on.
type JobStorer interface {
	// Plan returns a plan by id, ErrNotFound when there is none.
	Plan(ctx context.Context, id int) (Plan, error)

	// Upsert inserts nj or applies its fingerprint update, with its expiry
	// intent (and, for an insert, its creation mail) in the same statement.
	Upsert(ctx context.Context, nj NewJob) (Written, error)
	// Apply persists a decided change while the job is still in c.From
	// (ErrStale otherwise), with its expiry intent when c.Schedule().
	Apply(ctx context.Context, c Change) (Detail, error)
	// Edit writes the poster's edit of a job; ErrDuplicate when the owner
	// has another job with the edit's fingerprint.
	Edit(ctx context.Context, id int64, e Edited) (Detail, error)
	// RecordPayment keeps a payment; false when its (provider, reference)
	// was recorded before.
	RecordPayment(ctx context.Context, p Payment, action string) (bool, error)

	// QueryByID returns a job in any status as r may read it, ErrNotFound
	// when there is none.
	QueryByID(ctx context.Context, id int64, r Reader) (Detail, error)
	// QueryByIDs returns the jobs of ids that exist, latest committed state.
	QueryByIDs(ctx context.Context, ids []int64) ([]Detail, error)
	// QueryByHash returns the job whose edit hash is hash, ErrNotFound for none.
	QueryByHash(ctx context.Context, hash string) (Detail, error)
	// QueryBySpace returns a space's jobs in every status, newest first.
	QueryBySpace(ctx context.Context, spaceID int64, limit int) ([]Detail, error)
}

// IdempotencyStorer keeps the answers of Idempotency-Keys.
type IdempotencyStorer interface {
	// StoredResponse returns the recorded answer of an idempotency key
	// created after since, ErrNotFound when there is none.
	StoredResponse(ctx context.Context, keyID int64, key string, since time.Time) (StoredResponse, error)
	// ClaimIdempotency takes the key's lock for the transaction (false when
	// another transaction holds it) and removes its record from before since.
	ClaimIdempotency(ctx context.Context, keyID int64, key string, since time.Time) (bool, error)
	// SaveResponse records the answer of an idempotency key; ErrInFlight
	// when a concurrent request recorded one first.
	SaveResponse(ctx context.Context, idem Idempotency, status int, body []byte, jobID int64) error
}

// ListStorer reads the active jobs many at a time: searches, feeds and the
// sitemap (reach.go).
type ListStorer interface {
	// List streams the matching active jobs.
	List(ctx context.Context, f ListFilter) (JobRows, error)
	// Page returns one page of matching active jobs and their total.
	Page(ctx context.Context, f ListFilter) ([]Job, int, error)
	// Feed returns the latest active jobs of f (f.Limit of them) with their
	// descriptions, and when the public set of jobs last changed.
	Feed(ctx context.Context, f ListFilter) ([]Job, time.Time, error)
	// Active returns a batch of active jobs in id order (reach.go).
	Active(ctx context.Context, w ActiveWalk) ([]Detail, error)
	// SitemapParts lists the sitemap parts of size holding active jobs.
	SitemapParts(ctx context.Context, size int64) ([]SitemapPart, error)
	// Changed is when the public set of jobs last changed.
	Changed(ctx context.Context) (time.Time, error)
}

// BatchStorer keeps the batch operations (batchop.go) and finds what a
// replace closes (a batch's or an import source's).
type BatchStorer interface {
	// ReplaceCandidates lists an owner's active and paused jobs with an
	// external_ref not in keep (the owner: a space key's space, spaceID,
	// with ownerKeyID 0; or the platform key ownerKeyID), in id order:
	// those whose reference starts with prefix, or with prefix "" those of
	// no import source (no SourceRefPrefix).
	ReplaceCandidates(ctx context.Context, spaceID, ownerKeyID int64, prefix string, keep []string) ([]ReplaceCandidate, error)
	// InsertBatchOp keeps a new batch operation.
	InsertBatchOp(ctx context.Context, op BatchOp) error
	// ClaimBatchOp locks the oldest pending operation no one else holds, for
	// the transaction (ok false when there is none).
	ClaimBatchOp(ctx context.Context) (op BatchOp, ok bool, err error)
	// SaveBatchOp writes an operation's progress, results and status.
	SaveBatchOp(ctx context.Context, op BatchOp) error
	// QueryBatchOp returns an operation without its rows (RowCount says how
	// many), ErrNotFound when there is none.
	QueryBatchOp(ctx context.Context, id string) (BatchOp, error)
	// PurgeBatchOps removes the operations made before before.
	PurgeBatchOps(ctx context.Context, before time.Time) error
}

// JobRows iterates a streamed listing. Scan reuses dst.
type JobRows interface {
	Next() bool
	Scan(dst *Job) error
	Err() error
	Close()
}

// Directory is the look-up of city and space facts owned by the directory service.
type Directory interface {
	City(ctx context.Context, id int64) (City, bool, error)
	ResolveCityName(ctx context.Context, name string) (CityResolution, error)
	Space(ctx context.Context, id int64) (Space, bool, error)
}

// ErrUnannounced is a committed write whose change versions could not be
// bumped: it is stored, but answers cached before it could still be served,
// so it must not be acknowledged as done. Retrying the request announces it.
var ErrUnannounced = errors.New("jobbus: write stored but not announced to the caches")

// Config is what the rules need from the configuration.
type Config struct {
	PublicBaseURL   string // e.g. https://coworkjobs.example (no trailing slash)
	DefaultInvEmail string
}

// Business applies the job rules.
type Business struct {
	store Stores
	dir   Directory
	cfg   Config
	now   func() time.Time
	// kick says a batch operation was kept (BatchKicks).
	kick chan struct{}
}

// New returns the job rules over their stores and the directory (nil for the
// callers that never create a job: the worker, the admin command).
func New(store Stores, dir Directory, cfg Config) *Business {
	cfg.PublicBaseURL = strings.TrimRight(cfg.PublicBaseURL, "/")
	return &Business{store: store, dir: dir, cfg: cfg, now: time.Now, kick: make(chan struct{}, 1)}
}

// JobURL is the full public URL of a job's details page.
func (b *Business) JobURL(pageURL string) string { return b.cfg.PublicBaseURL + "/jobs/" + pageURL }

// BaseURL is the configured public base URL.
func (b *Business) BaseURL() string { return b.cfg.PublicBaseURL }

// Create validates in, then creates the job or updates the caller's job
// with the same fingerprint. With an Idempotency-Key (idem) the job and the
// reply idem.Render makes of it commit together, and the reply is returned:
// a retry of the key gets the recorded reply (Replayed) and writes nothing.
func (b *Business) Create(ctx context.Context, caller Caller, in CreateInput, idem *Idempotency) (CreateResult, *Reply, error) {
	if idem != nil {
		// Most retries find their reply here, without a transaction.
		if r, err := b.replay(ctx, b.store.Idem, *idem); r != nil || err != nil {
			return CreateResult{}, r, err
		}
	}
	nj, err := b.prepare(ctx, caller, in)
	if err != nil {
		return CreateResult{}, nil, err
	}
	if idem == nil {
		w, err := b.store.Jobs.Upsert(ctx, nj)
		if err != nil {
			return CreateResult{}, nil, err
		}
		return b.result(nj, w), nil, nil
	}
	var res CreateResult
	var reply *Reply
	err = b.store.Tx.InTx(ctx, func(s Stores) error {
		locked, err := s.Idem.ClaimIdempotency(ctx, idem.KeyID, idem.Key, b.now().Add(-IdempotencyTTL))
		if err != nil {
			return err
		}
		if !locked {
			return ErrInFlight
		}
		// A concurrent request with the key may have finished first.
		if reply, err = b.replay(ctx, s.Idem, *idem); reply != nil || err != nil {
			return err
		}
		w, err := s.Jobs.Upsert(ctx, nj)
		if err != nil {
			return err
		}
		res = b.result(nj, w)
		status, body, err := idem.Render(res)
		if err != nil {
			return err
		}
		reply = &Reply{Status: status, Body: body}
		return s.Idem.SaveResponse(ctx, *idem, status, body, res.JobID)
	})
	if err != nil {
		return CreateResult{}, nil, err
	}
	return res, reply, nil
}

// replay is the recorded reply of an idempotency key, nil when there is
// none; ErrIdempotencyMismatch when the key came with another request.
func (b *Business) replay(ctx context.Context, s IdempotencyStorer, idem Idempotency) (*Reply, error) {
	stored, err := s.StoredResponse(ctx, idem.KeyID, idem.Key, b.now().Add(-IdempotencyTTL))
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read idempotency key: %w", err)
	case stored.RequestHash != idem.RequestHash:
		return nil, ErrIdempotencyMismatch
	}
	return &Reply{Status: stored.Status, Body: stored.Body, Replayed: true}, nil
}

func (b *Business) result(nj NewJob, w Written) CreateResult {
	page := PageURL(w.Slug, w.JobID)
	r := CreateResult{
		JobID:          w.JobID,
		ExternalRef:    nj.ExternalRef,
		PageURL:        page,
		HashIdentifier: w.HashIdentifier,
		Status:         w.Status,
		Action:         ActionCreated,
		DedupeHash:     nj.Fingerprint,
		IsPaid:         w.IsPaid,
		City:           w.City,
		ApplyURL:       w.ApplyURL,
		PlanPrice:      w.Plan.Price,
		ExpirationDays: w.Plan.ExpirationDays,
		EditURL:        b.cfg.PublicBaseURL + "/jobs/edit?job=" + w.HashIdentifier,
		UnpublishURL:   b.cfg.PublicBaseURL + "/jobs/unpublish?job=" + w.HashIdentifier,
	}
	if !w.Inserted {
		r.Action = ActionUpdated
	}
	if w.Status == StatusActive && w.ExpirationDate.After(b.now()) {
		v := b.JobURL(page)
		r.ViewURL = &v
	}
	paymentDue := w.Plan.Price > 0 && !w.IsPaid && (w.Status == StatusDraft || w.Status == StatusActive)
	if paymentDue {
		p := b.cfg.PublicBaseURL + "/jobs/pay?job=" + w.HashIdentifier
		r.PaymentURL = &p
	}
	switch {
	case r.Action == ActionUpdated && w.Status != StatusActive && w.Status != StatusDraft:
		r.Message = "An existing job with the same fingerprint was updated; it stays " + w.Status + " and is not republished."
		if nj.ExternalRef != nil {
			r.Message = "The existing job with this external_ref was updated; it stays " + w.Status + " and is not republished."
		}
	case r.Action == ActionUpdated && nj.ExternalRef != nil:
		r.Message = "The existing job with this external_ref was updated."
	case r.Action == ActionUpdated:
		r.Message = "An existing job with the same fingerprint was updated."
	case w.Status == StatusActive && paymentDue:
		r.Message = "Job created and published; payment for the plan is due at payment_url."
	case w.Status == StatusActive:
		r.Message = "Job created and published."
	case paymentDue:
		r.Message = "Job created as a draft; complete the payment at payment_url to publish it."
	default:
		r.Message = "Job created as a draft; review and publish it at edit_url."
	}
	if r.Action == ActionUpdated && nj.PlanGiven && w.Plan.ID != nj.Plan.ID {
		r.Message += fmt.Sprintf(" Its plan stays %q (id_plan %d): a plan is chosen while the job is a draft; "+
			"a live job's plan changes when it is relisted or posted anew.", w.Plan.Name, w.Plan.ID)
	}
	return r
}

// List streams the active jobs that match f, as the caller may read them.
func (b *Business) List(ctx context.Context, caller Caller, f ListFilter) (JobRows, error) {
	f.Reader = Reader{KeyID: caller.KeyID}
	return b.store.Lists.List(ctx, f)
}

// Page returns one page of the active jobs that match f, and their total.
func (b *Business) Page(ctx context.Context, caller Caller, f ListFilter) ([]Job, int, error) {
	f.Reader = Reader{KeyID: caller.KeyID}
	return b.store.Lists.Page(ctx, f)
}

// Feed returns the latest active jobs of f, newest first whatever f's sort,
// and when the public set of jobs last changed: a public read.
func (b *Business) Feed(ctx context.Context, f ListFilter) ([]Job, time.Time, error) {
	f.Sort, f.Offset, f.Reader = SortNewest, 0, Reader{}
	return b.store.Lists.Feed(ctx, f)
}
