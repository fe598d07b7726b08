package jobbus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/api/scopes"
	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/validate"
)

// Storer is the storage the rules need. It persists what the rules decided;
// it does not decide.
type Storer interface {
	// Begin starts a transaction; NewWithTx binds a store to it.
	Begin(ctx context.Context) (Tx, error)
	NewWithTx(tx Tx) (Storer, error)
	// ReadsFor returns the store whose List, Page, Feed and QueryByID
	// (without lock) may run on a read replica: once it has replayed the
	// last write of keyID (0: an anonymous reader, any replica state will
	// do). MarkWritten records, after a write by keyID has committed, how
	// far a replica must have replayed for that key's reads.
	ReadsFor(ctx context.Context, keyID int64) (Storer, error)
	MarkWritten(ctx context.Context, keyID int64) error

	// Plan returns a plan by id, ErrNotFound when there is none.
	Plan(ctx context.Context, id int) (Plan, error)

	// StoredResponse returns the recorded answer of an idempotency key
	// created after since, ErrNotFound when there is none.
	StoredResponse(ctx context.Context, keyID int64, key string, since time.Time) (StoredResponse, error)
	// LockIdempotency takes the key's lock for the transaction; false when
	// another transaction holds it.
	LockIdempotency(ctx context.Context, keyID int64, key string) (bool, error)
	// DeleteIdempotency removes a key's (expired) record.
	DeleteIdempotency(ctx context.Context, keyID int64, key string) error
	// SaveResponse records the answer of an idempotency key; ErrInFlight
	// when a concurrent request recorded one first.
	SaveResponse(ctx context.Context, idem Idempotency, status int, body []byte, jobID int64) error

	// Owe records that the views of spaceID (0: none, -1: every space)
	// are owed an announcement; TakeOwed removes and returns them all.
	Owe(ctx context.Context, spaceID int64) error
	TakeOwed(ctx context.Context) ([]int64, error)

	// Upsert inserts nj or applies its fingerprint update, with its expiry
	// intent (and, for an insert, its creation mail) in the same statement.
	Upsert(ctx context.Context, nj NewJob) (Written, error)
	// List streams the matching active jobs.
	List(ctx context.Context, f ListFilter) (JobRows, error)
	// Page returns one page of matching active jobs and the total.
	Page(ctx context.Context, f ListFilter) ([]Job, int, error)
	// PageOf returns the page of a listing whose total is known.
	PageOf(ctx context.Context, f ListFilter, total int) ([]Job, error)
	// Count counts a listing's jobs on the primary; Expired counts those of
	// them that expired between since and now; CountKey names the count
	// (the same filter, the same name).
	Count(ctx context.Context, f ListFilter) (Total, error)
	Expired(ctx context.Context, f ListFilter, since time.Time) (int, error)
	CountKey(f ListFilter) string
	// Feed returns the latest active jobs with their descriptions.
	Feed(ctx context.Context, limit int) ([]Job, error)

	// QueryByID returns a job in any status; forUpdate locks its row for
	// the transaction. ErrNotFound when there is none.
	QueryByID(ctx context.Context, id int64, forUpdate bool) (Detail, error)
	// QueryByHash returns the job whose edit hash is hash, ErrNotFound for none.
	QueryByHash(ctx context.Context, hash string) (Detail, error)
	// Apply persists a decided change while the job is still in c.From
	// (ErrStale otherwise), with its expiry intent when c.Schedule().
	Apply(ctx context.Context, c Change) (Detail, error)
	// RecordPayment keeps a payment; false when its (provider, reference)
	// was recorded before.
	RecordPayment(ctx context.Context, p Payment, action string) (bool, error)
	// Edit writes the poster's edit of a job.
	Edit(ctx context.Context, id int64, e Edited) (Detail, error)
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

// Config is what the rules need from the configuration.
type Config struct {
	PublicBaseURL   string // e.g. https://coworkjobs.example (no trailing slash)
	DefaultInvEmail string
	// Changes are bumped after every write, before it is answered (nil:
	// none, as without REDIS_URL).
	Changes *changes.Versions
	// TotalsMemo keeps listings' totals as memos under Changes (totals.go).
	TotalsMemo bool
}

// Business applies the job rules.
type Business struct {
	store  Storer
	dir    Directory
	cfg    Config
	now    func() time.Time
	totals *totals
}

// New returns the job rules over a store and the directory (nil for the
// callers that never create a job: the worker, the admin command).
func New(store Storer, dir Directory, cfg Config) *Business {
	cfg.PublicBaseURL = strings.TrimRight(cfg.PublicBaseURL, "/")
	return &Business{store: store, dir: dir, cfg: cfg, now: time.Now, totals: &totals{}}
}

// NewWithTx returns the same rules over a store bound to tx, so that a
// caller can write more in the same transaction (the idempotent reply).
func (b *Business) NewWithTx(tx Tx) (*Business, error) {
	s, err := b.store.NewWithTx(tx)
	if err != nil {
		return nil, err
	}
	nb := *b
	nb.store = s
	return &nb, nil
}

// Begin starts a transaction for NewWithTx.
func (b *Business) Begin(ctx context.Context) (Tx, error) { return b.store.Begin(ctx) }

// JobURL is the full public URL of a job's details page.
func (b *Business) JobURL(pageURL string) string { return b.cfg.PublicBaseURL + "/jobs/" + pageURL }

// BaseURL is the configured public base URL.
func (b *Business) BaseURL() string { return b.cfg.PublicBaseURL }

// Replay returns the recorded answer of an idempotency key, nil when there
// is none; ErrIdempotencyMismatch when the key came with another request.
func (b *Business) Replay(ctx context.Context, idem Idempotency) (*StoredResponse, error) {
	stored, err := b.store.StoredResponse(ctx, idem.KeyID, idem.Key, b.now().Add(-IdempotencyTTL))
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read idempotency key: %w", err)
	case stored.RequestHash != idem.RequestHash:
		return nil, ErrIdempotencyMismatch
	}
	return &stored, nil
}

// ClaimIdempotency takes an idempotency key for the bound transaction: the
// recorded answer when a concurrent request finished first, ErrInFlight
// while one is still running, nil when the caller may go on.
func (b *Business) ClaimIdempotency(ctx context.Context, idem Idempotency) (*StoredResponse, error) {
	locked, err := b.store.LockIdempotency(ctx, idem.KeyID, idem.Key)
	if err != nil {
		return nil, err
	}
	if !locked {
		return nil, ErrInFlight
	}
	stored, err := b.Replay(ctx, idem)
	if stored != nil || err != nil {
		return stored, err
	}
	// An expired record of the same key gives way to the new request.
	return nil, b.store.DeleteIdempotency(ctx, idem.KeyID, idem.Key)
}

// RememberReply records the answer given to an idempotency key, in the
// transaction the job was written in.
func (b *Business) RememberReply(ctx context.Context, idem Idempotency, status int, body []byte, jobID int64) error {
	return b.store.SaveResponse(ctx, idem, status, body, jobID)
}

// Create validates in, then creates the job or updates the one with the
// same fingerprint.
func (b *Business) Create(ctx context.Context, caller Caller, in CreateInput) (CreateResult, error) {
	nj, err := b.Prepare(ctx, caller, in)
	if err != nil {
		return CreateResult{}, err
	}
	return b.Save(ctx, nj)
}

// Save writes a prepared job: an insert, or the fingerprint update the
// lifecycle table decides.
func (b *Business) Save(ctx context.Context, nj NewJob) (CreateResult, error) {
	w, err := b.store.Upsert(ctx, nj)
	if err != nil {
		return CreateResult{}, err
	}
	return b.result(nj, w), nil
}

func (b *Business) result(nj NewJob, w Written) CreateResult {
	page := PageURL(w.Slug, w.JobID)
	r := CreateResult{
		Wrote:          w.Wrote,
		Owed:           w.Owed,
		JobID:          w.JobID,
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

// Prepare applies every field rule and reports all problems at once; the
// directory is asked here, before any transaction begins.
func (b *Business) Prepare(ctx context.Context, caller Caller, in CreateInput) (NewJob, error) {
	p := append([]string(nil), in.TypeProblems...)
	nj := NewJob{KeyID: caller.KeyID}

	nj.Title = requiredText(in.Title, "title", MaxTitleLen, &p)
	nj.Company = requiredText(in.Company, "company", MaxCompanyLen, &p)
	if in.Description == nil {
		p = append(p, "description is required")
	} else {
		nj.Description = description(*in.Description, &p)
	}
	if in.JobType == nil {
		p = append(p, "job_type is required")
	} else {
		nj.JobType = jobType(*in.JobType, &p)
	}
	if in.Tags == nil {
		p = append(p, "tags is required")
	} else {
		nj.Tags = tags(*in.Tags, &p)
	}
	if in.ExternalURL != nil && strings.TrimSpace(*in.ExternalURL) != "" {
		u, ok := ExternalURL(*in.ExternalURL)
		if !ok {
			p = append(p, fmt.Sprintf("external_url must be an absolute http or https URL of at most %d characters", MaxURLLen))
		}
		nj.ExternalURL = u
	}
	if in.ApplyURL != nil && strings.TrimSpace(*in.ApplyURL) != "" {
		u, ok := ApplyURL(*in.ApplyURL)
		if !ok {
			p = append(p, "apply_url must be an absolute http or https URL or a mailto: link")
		}
		nj.ApplyURL = &u
	}
	if in.IsRemote != nil {
		switch *in.IsRemote {
		case 0:
		case 1:
			nj.IsRemote = true
		default:
			p = append(p, "is_remote must be 0 or 1")
		}
	}
	nj.InvEmail = b.cfg.DefaultInvEmail
	if in.InvEmail != nil && ValidEmail(strings.TrimSpace(*in.InvEmail)) {
		nj.InvEmail = strings.TrimSpace(*in.InvEmail)
	}
	nj.Currency = DefaultCurrency
	if in.Currency != nil {
		nj.Currency = currency(*in.Currency, &p)
	}
	salary(in.SalMin, in.SalMax, &p)
	nj.SalMin, nj.SalMax = in.SalMin, in.SalMax

	planID := int64(DefaultPlanID)
	if in.IDPlan != nil {
		planID, nj.PlanGiven = *in.IDPlan, true
	}
	if planID < 1 || planID > 1<<31-1 {
		p = append(p, "id_plan must be a positive integer")
	} else {
		plan, err := b.store.Plan(ctx, int(planID))
		switch {
		case errors.Is(err, ErrNotFound) || err == nil && !plan.Active:
			p = append(p, fmt.Sprintf("id_plan %d is not an active plan", planID))
		case err != nil:
			return NewJob{}, fmt.Errorf("read plan: %w", err)
		}
		nj.Plan = plan
	}

	// The space: the key's own, or for a key without one an id_space that
	// exists and is confirmed.
	pro := false
	switch {
	case in.IDSpace != nil && caller.SpaceID != 0 && *in.IDSpace != caller.SpaceID:
		return NewJob{}, ErrSpaceConflict
	case caller.SpaceID != 0:
		sp, ok, err := b.dir.Space(ctx, caller.SpaceID)
		if err != nil {
			return NewJob{}, err
		}
		nj.SpaceID = caller.SpaceID
		if ok {
			name := sp.Name
			nj.SpaceName = &name
			pro = sp.Confirmed && sp.IsPro
		}
	case in.IDSpace != nil && !caller.TrustedImporter:
		return NewJob{}, ErrSpaceNotGranted
	case in.IDSpace != nil:
		if *in.IDSpace < 1 {
			p = append(p, "id_space must be a positive integer")
			break
		}
		sp, ok, err := b.dir.Space(ctx, *in.IDSpace)
		if err != nil {
			return NewJob{}, err
		}
		if !ok || !sp.Confirmed {
			p = append(p, fmt.Sprintf("id_space %d is not a confirmed space", *in.IDSpace))
			break
		}
		name := sp.Name
		nj.SpaceID, nj.SpaceName = sp.ID, &name
	}

	if err := b.resolveCity(ctx, in, &nj, &p); err != nil {
		return NewJob{}, err
	}

	if len(p) > 0 {
		return NewJob{}, &validate.Error{What: "job", Problems: p}
	}
	qualified := pro || caller.TrustedImporter
	nj.Status = InitialStatus(qualified)
	nj.UpdateFrom, nj.UpdateTo, nj.Refresh = UpdateMoves(qualified)
	nj.Slug = Slug(nj.Title, nj.City.Slug)
	nj.Fingerprint = Fingerprint(nj.Title, nj.Company, nj.City.ID, nj.ExternalURL)
	nj.OwnerKeyID = OwnerOf(caller)
	nj.HashIdentifier = newHash()
	return nj, nil
}

func (b *Business) resolveCity(ctx context.Context, in CreateInput, nj *NewJob, p *[]string) error {
	switch {
	case in.IDCity != nil:
		if *in.IDCity < 1 {
			*p = append(*p, "id_city must be a positive integer")
			return nil
		}
		c, ok, err := b.dir.City(ctx, *in.IDCity)
		if err != nil {
			return err
		}
		if !ok || !c.Confirmed {
			*p = append(*p, fmt.Sprintf("id_city %d is not a confirmed city; find one with GET /v2/cities", *in.IDCity))
			return nil
		}
		nj.City = c
	case in.CityName != nil && strings.TrimSpace(*in.CityName) != "":
		name := collapseSpaces(*in.CityName)
		n := len(*p)
		plainLine(name, "city_name", p)
		if utf8.RuneCountInString(name) > MaxCityNameLen {
			*p = append(*p, fmt.Sprintf("city_name must be at most %d characters", MaxCityNameLen))
		}
		if len(*p) > n {
			return nil
		}
		r, err := b.dir.ResolveCityName(ctx, name)
		if err != nil {
			return err
		}
		switch r.Result {
		case "resolved":
			nj.City = r.City
		case "ambiguous":
			names := make([]string, 0, len(r.Candidates))
			for _, c := range r.Candidates {
				names = append(names, c.Name+" (id_city "+strconv.FormatInt(c.ID, 10)+")")
			}
			*p = append(*p, fmt.Sprintf("city_name %q matches several cities: %s; send id_city instead", name, strings.Join(names, ", ")))
		default:
			*p = append(*p, fmt.Sprintf("city_name %q matches no confirmed city; find one with GET /v2/cities", name))
		}
	default:
		// A city field sent with the wrong type has its problem reported
		// already; saying it is missing too would contradict it.
		for _, tp := range in.TypeProblems {
			if strings.HasPrefix(tp, "id_city ") || strings.HasPrefix(tp, "city_name ") {
				return nil
			}
		}
		*p = append(*p, "id_city or city_name is required")
	}
	return nil
}

func requiredText(v *string, name string, max int, p *[]string) string {
	if v == nil || strings.TrimSpace(*v) == "" {
		*p = append(*p, name+" is required")
		return ""
	}
	plainLine(*v, name, p)
	s := collapseSpaces(*v)
	if utf8.RuneCountInString(s) > max {
		*p = append(*p, fmt.Sprintf("%s must be at most %d characters", name, max))
	}
	return s
}

func newHash() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// List streams the active jobs that match f, as the caller may read them
// (ReadsFor).
func (b *Business) List(ctx context.Context, caller Caller, f ListFilter) (JobRows, error) {
	s, err := b.store.ReadsFor(ctx, caller.KeyID)
	if err != nil {
		return nil, err
	}
	return s.List(ctx, f)
}

// Feed returns the latest active jobs: a public read.
func (b *Business) Feed(ctx context.Context, limit int) ([]Job, error) {
	s, err := b.store.ReadsFor(ctx, 0)
	if err != nil {
		return nil, err
	}
	return s.Feed(ctx, limit)
}

// Wrote records that caller's write to a job of spaceID has committed, so
// that its next reads see it wherever they run (ReadsFor) and no reader is
// served an answer cached before it (Changed).
func (b *Business) Wrote(ctx context.Context, caller Caller, spaceID int64) error {
	if err := b.store.MarkWritten(ctx, caller.KeyID); err != nil {
		return err
	}
	return b.Changed(ctx, spaceID)
}

// Announce is what a create answer needs announced before it is sent: its
// own write (Wrote), unless it wrote nothing (an unchanged re-post), and any
// write still owed an announcement (owed), which a replay or an unchanged
// re-post may be the retry of. Neither touches Redis when nothing is owed
// (make bench rows e1 and e2).
func (b *Business) Announce(ctx context.Context, caller Caller, spaceID int64, wrote, owed bool) error {
	if wrote {
		if err := b.Wrote(ctx, caller, spaceID); err != nil {
			return err
		}
	}
	if !owed {
		return nil
	}
	spaces, err := b.store.TakeOwed(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnannounced, err)
	}
	for _, id := range spaces {
		if err := b.Changed(ctx, id); err != nil {
			// Changed owes id again; the rest stay owed too.
			for _, rest := range spaces {
				b.owe(ctx, rest)
			}
			return err
		}
	}
	return nil
}

// ErrUnannounced is a committed write whose change versions could not be
// bumped: it is stored, but answers cached before it could still be served,
// so it must not be acknowledged as done. Retrying the request bumps again.
var ErrUnannounced = errors.New("jobbus: write stored but not announced to the caches")

// Changed bumps the change versions a write to a job of spaceID moves:
// every job's, and the space's (a job of no space is in no space's view);
// spaceID < 0 is a write whose space is not known (an idempotent replay),
// which moves every space's view.
func (b *Business) Changed(ctx context.Context, spaceID int64) error {
	var err error
	switch {
	case spaceID > 0:
		err = b.cfg.Changes.Bump(ctx, scopes.Jobs, scopes.JobsSpace(spaceID))
	case spaceID < 0:
		err = b.cfg.Changes.Bump(ctx, scopes.Jobs, scopes.JobsBulk)
	default:
		err = b.cfg.Changes.Bump(ctx, scopes.Jobs)
	}
	if err != nil {
		b.owe(ctx, spaceID)
		return fmt.Errorf("%w: %w", ErrUnannounced, err)
	}
	return nil
}

// owe records an announcement that failed, for whichever request comes next
// (Announce). When that fails too the caller still answers 503, and the
// views stay as they were until the next write of the space bumps them.
func (b *Business) owe(ctx context.Context, spaceID int64) {
	_ = b.store.Owe(context.WithoutCancel(ctx), spaceID)
}
