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
)

// Storer is the storage the rules need.
type Storer interface {
	// Plan returns a plan by id, ErrNotFound when there is none.
	Plan(ctx context.Context, id int) (Plan, error)
	// StoredResponse returns the recorded answer of an idempotency key
	// created after since, ErrNotFound when there is none.
	StoredResponse(ctx context.Context, keyID int64, key string, since time.Time) (StoredResponse, error)
	// Upsert inserts nj or updates the job with its fingerprint in one
	// transaction with its expiry intent and, when idem is set, the
	// idempotency record rendered by finish. With idem, a concurrent holder
	// of the key gives ErrInFlight and an already recorded answer is
	// returned instead of writing anything.
	Upsert(ctx context.Context, nj NewJob, idem *Idempotency, since time.Time,
		finish func(Written) (status int, body []byte, err error)) (Written, *StoredResponse, error)
	// List streams the matching active jobs.
	List(ctx context.Context, f ListFilter) (JobRows, error)
	// Page returns one page of matching active jobs and the total.
	Page(ctx context.Context, f ListFilter) ([]Job, int, error)
	// Feed returns the latest active jobs with their descriptions.
	Feed(ctx context.Context, limit int) ([]Job, error)
	// JobOwner returns a job's owner space, creating key and status.
	JobOwner(ctx context.Context, jobID int64) (spaceID, keyID int64, status string, err error)
	// Expire moves a job to expired when its status is one of from; it
	// reports whether it did and the status the job has afterwards.
	Expire(ctx context.Context, jobID int64, from []string) (bool, string, error)
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
}

// Business applies the job rules.
type Business struct {
	store Storer
	dir   Directory
	cfg   Config
	now   func() time.Time
}

// New returns the job rules over a store and the directory.
func New(store Storer, dir Directory, cfg Config) *Business {
	cfg.PublicBaseURL = strings.TrimRight(cfg.PublicBaseURL, "/")
	return &Business{store: store, dir: dir, cfg: cfg, now: time.Now}
}

// JobURL is the full public URL of a job's details page.
func (b *Business) JobURL(pageURL string) string { return b.cfg.PublicBaseURL + "/jobs/" + pageURL }

// BaseURL is the configured public base URL.
func (b *Business) BaseURL() string { return b.cfg.PublicBaseURL }

// Create validates in, then creates the job or updates the one with the same
// fingerprint. With idem, an earlier answer to the same key is replayed
// (returned as the *StoredResponse), and the new answer is recorded in the
// job's transaction through render.
func (b *Business) Create(ctx context.Context, caller Caller, in CreateInput, idem *Idempotency, render Renderer) (CreateResult, *StoredResponse, error) {
	since := b.now().Add(-IdempotencyTTL)
	if idem != nil {
		stored, err := b.store.StoredResponse(ctx, idem.KeyID, idem.Key, since)
		switch {
		case err == nil:
			if stored.RequestHash != idem.RequestHash {
				return CreateResult{}, nil, ErrIdempotencyMismatch
			}
			return CreateResult{}, &stored, nil
		case !errors.Is(err, ErrNotFound):
			return CreateResult{}, nil, fmt.Errorf("read idempotency key: %w", err)
		}
	}

	nj, err := b.prepare(ctx, caller, in)
	if err != nil {
		return CreateResult{}, nil, err
	}

	var res CreateResult
	finish := func(w Written) (int, []byte, error) {
		res = b.result(nj, w)
		if render == nil {
			return 0, nil, nil
		}
		return render(res)
	}
	w, stored, err := b.store.Upsert(ctx, nj, idem, since, finish)
	if err != nil {
		return CreateResult{}, nil, err
	}
	if stored != nil {
		if stored.RequestHash != idem.RequestHash {
			return CreateResult{}, nil, ErrIdempotencyMismatch
		}
		return CreateResult{}, stored, nil
	}
	if render == nil {
		res = b.result(nj, w)
	}
	return res, nil, nil
}

func (b *Business) result(nj NewJob, w Written) CreateResult {
	page := PageURL(w.Slug, w.JobID)
	r := CreateResult{
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
	return r
}

// prepare applies every field rule and reports all problems at once.
func (b *Business) prepare(ctx context.Context, caller Caller, in CreateInput) (NewJob, error) {
	p := append([]string(nil), in.TypeProblems...)
	nj := NewJob{KeyID: caller.KeyID}

	nj.Title = requiredText(in.Title, "title", MaxTitleLen, &p)
	nj.Company = requiredText(in.Company, "company", MaxCompanyLen, &p)
	if in.Description == nil || strings.TrimSpace(*in.Description) == "" {
		p = append(p, "description is required")
	} else if utf8.RuneCountInString(*in.Description) > MaxDescriptionLen {
		p = append(p, fmt.Sprintf("description must be at most %d characters", MaxDescriptionLen))
	} else if nj.Description = SanitizeDescription(*in.Description); Summary(nj.Description, 10) == "" {
		p = append(p, "description has no text left after removing disallowed HTML")
	}
	if in.JobType == nil || strings.TrimSpace(*in.JobType) == "" {
		p = append(p, "job_type is required")
	} else if t := strings.ToLower(strings.TrimSpace(*in.JobType)); !ValidJobType(t) {
		p = append(p, "job_type must be one of "+strings.Join(JobTypes, ", "))
	} else {
		nj.JobType = t
	}
	if in.Tags == nil || strings.TrimSpace(*in.Tags) == "" {
		p = append(p, "tags is required")
	} else {
		tags := NormalizeTags(*in.Tags)
		switch {
		case len(tags) == 0:
			p = append(p, "tags must contain at least one non-empty tag")
		case len(tags) > MaxTags:
			p = append(p, fmt.Sprintf("tags must contain at most %d tags", MaxTags))
		default:
			for _, t := range tags {
				if utf8.RuneCountInString(t) > MaxTagLen {
					p = append(p, fmt.Sprintf("each tag must be at most %d characters", MaxTagLen))
					break
				}
			}
		}
		nj.Tags = strings.Join(tags, ",")
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
	if in.Currency != nil && strings.TrimSpace(*in.Currency) != "" {
		c := strings.ToUpper(strings.TrimSpace(*in.Currency))
		ok := false
		for _, v := range Currencies {
			ok = ok || v == c
		}
		if !ok {
			p = append(p, "currency must be one of "+strings.Join(Currencies, ", "))
		}
		nj.Currency = c
	}
	salOK := true
	for _, s := range []struct {
		name string
		v    *int64
	}{{"sal_min", in.SalMin}, {"sal_max", in.SalMax}} {
		if s.v != nil && (*s.v < 0 || *s.v > MaxSalary) {
			p = append(p, fmt.Sprintf("%s must be between 0 and %d", s.name, MaxSalary))
			salOK = false
		}
	}
	if salOK && in.SalMin != nil && in.SalMax != nil && *in.SalMin > *in.SalMax {
		p = append(p, "sal_min must not exceed sal_max")
	}
	nj.SalMin, nj.SalMax = in.SalMin, in.SalMax

	planID := int64(DefaultPlanID)
	if in.IDPlan != nil {
		planID = *in.IDPlan
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
		return NewJob{}, &ValidationError{Problems: p}
	}
	nj.Status = StatusDraft
	if pro || caller.TrustedImporter {
		nj.Status = StatusActive
	}
	nj.Slug = Slug(nj.Title, nj.City.Slug)
	nj.Fingerprint = Fingerprint(nj.Title, nj.Company, nj.City.ID, nj.ExternalURL)
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
		if utf8.RuneCountInString(name) > MaxCityNameLen {
			*p = append(*p, fmt.Sprintf("city_name must be at most %d characters", MaxCityNameLen))
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

// List streams the active jobs that match f.
func (b *Business) List(ctx context.Context, f ListFilter) (JobRows, error) {
	return b.store.List(ctx, f)
}

// Page returns one page of the active jobs that match f, and their total.
func (b *Business) Page(ctx context.Context, f ListFilter) ([]Job, int, error) {
	return b.store.Page(ctx, f)
}

// Feed returns the latest active jobs.
func (b *Business) Feed(ctx context.Context, limit int) ([]Job, error) {
	return b.store.Feed(ctx, limit)
}

// Unpublish moves a job of the caller to expired. A space key may touch only
// its space's jobs; a key without a space only jobs of no space or jobs it
// created itself. Active, draft and paused jobs are unpublished; expired and
// closed ones are answered already_unpublished. The record is kept.
func (b *Business) Unpublish(ctx context.Context, caller Caller, jobID int64) (UnpublishResult, error) {
	spaceID, keyID, _, err := b.store.JobOwner(ctx, jobID)
	if err != nil {
		return UnpublishResult{}, err
	}
	allowed := caller.SpaceID != 0 && spaceID == caller.SpaceID ||
		caller.SpaceID == 0 && (spaceID == 0 || keyID == caller.KeyID)
	if !allowed {
		return UnpublishResult{}, ErrForbidden
	}
	done, status, err := b.store.Expire(ctx, jobID, []string{StatusActive, StatusDraft, StatusPaused})
	if err != nil {
		return UnpublishResult{}, err
	}
	res := UnpublishResult{JobID: jobID, Status: status, Action: ActionAlreadyUnpublished}
	if done {
		res.Action = ActionUnpublished
	}
	return res, nil
}
