package jobbus

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/libs/validate"
)

// QueryByID returns a job in any status as it is now (the worker, the
// pages, payments).
func (b *Business) QueryByID(ctx context.Context, id int64) (Detail, error) {
	return b.store.Jobs.QueryByID(ctx, id, Reader{Latest: true})
}

// PublicByID is QueryByID for an anonymous reader (the public job page).
func (b *Business) PublicByID(ctx context.Context, id int64) (Detail, error) {
	return b.store.Jobs.QueryByID(ctx, id, Reader{})
}

// QueryByHash returns the job whose edit hash is hash. The hash is a
// capability: the store finds it by its digest, and the match is confirmed
// here in constant time.
func (b *Business) QueryByHash(ctx context.Context, hash string) (Detail, error) {
	if !validHash(hash) {
		return Detail{}, ErrNotFound
	}
	d, err := b.store.Jobs.QueryByHash(ctx, hash)
	if err != nil {
		return Detail{}, err
	}
	if subtle.ConstantTimeCompare([]byte(d.HashIdentifier), []byte(hash)) != 1 {
		return Detail{}, ErrNotFound
	}
	return d, nil
}

// validHash: 32 lower-case hex digits, as newHash makes them.
func validHash(h string) bool {
	if len(h) != 32 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Get returns one job as the caller may see it: a space key its own space's
// jobs in every status (403 for another space's job); any job-reading key
// an active job, within its space when space-scoped; a key with no space
// also the jobs it created. Anything else is ErrNotFound.
func (b *Business) Get(ctx context.Context, caller Caller, id int64) (Detail, error) {
	d, err := b.store.Jobs.QueryByID(ctx, id, Reader{KeyID: caller.KeyID})
	if err != nil {
		return Detail{}, err
	}
	if err := b.readable(caller, d); err != nil {
		return Detail{}, err
	}
	return d, nil
}

// readable is Get's rule: nil when caller may read d, else its refusal.
func (b *Business) readable(caller Caller, d Detail) error {
	switch {
	case caller.SpaceID != 0 && d.SpaceID == caller.SpaceID:
		return nil
	case caller.SpaceID != 0 && d.SpaceID != 0:
		return b.refusal(d)
	case caller.SpaceID != 0:
		return ErrNotFound
	case d.KeyID == caller.KeyID || b.Visible(d):
		return nil
	}
	return ErrNotFound
}

// refusal is the answer to a caller that may not have job d: ErrForbidden
// for a job anyone may see listed (the spec's 403 for another space's job),
// ErrNotFound for one it could not know exists (a draft, a paused or expired
// job), so that a 403 tells nothing a listing does not.
func (b *Business) refusal(d Detail) error {
	if b.Visible(d) {
		return ErrForbidden
	}
	return ErrNotFound
}

// Visible reports whether a job is publicly listed: active and not past
// its expiration date (the timer may not have fired yet).
func (b *Business) Visible(d Detail) bool {
	return d.Status == StatusActive && d.ExpirationDate.After(b.now())
}

// Links are a job's URLs.
func (b *Business) Links(d Detail) Links {
	l := Links{
		URL:          b.JobURL(PageURL(d.Slug, d.ID)),
		EditURL:      b.cfg.PublicBaseURL + "/jobs/edit?job=" + d.HashIdentifier,
		UnpublishURL: b.cfg.PublicBaseURL + "/jobs/unpublish?job=" + d.HashIdentifier,
	}
	if b.Visible(d) {
		v := l.URL
		l.ViewURL = &v
	}
	if b.PaymentDue(d) {
		p := b.paymentURL(d.HashIdentifier)
		l.PaymentURL = &p
	}
	return l
}

func (b *Business) paymentURL(hash string) string {
	return b.cfg.PublicBaseURL + "/jobs/pay?job=" + hash
}

// PaymentDue reports whether the job's plan waits for a payment: to publish
// a draft, to relist an expired job, or to settle a Pro space's invoiced
// job that went live unpaid.
func (b *Business) PaymentDue(d Detail) bool {
	f := facts{job: d, now: b.now()}
	if needsPayment(f, EventPublish) || needsPayment(f, EventRelist) {
		return true
	}
	return d.Status == StatusActive && d.Plan.Price > 0 && !d.IsPaid
}

// Owns reports whether caller may change the job: a space key its space's
// jobs; a key without a space only the jobs it created (two platforms
// posting without a space must not touch each other's jobs).
func Owns(caller Caller, d Detail) bool {
	if caller.SpaceID != 0 {
		return d.SpaceID == caller.SpaceID
	}
	return d.KeyID == caller.KeyID
}

// OwnerOf is the namespace of caller's fingerprints within the job's space:
// 0, the space's own, for a space key; the key itself for a key without a
// space. A fingerprint match is therefore always a job the caller Owns.
func OwnerOf(caller Caller) int64 {
	if caller.SpaceID != 0 {
		return 0
	}
	return caller.KeyID
}

// Transition applies one of RouteEvents for an API caller.
func (b *Business) Transition(ctx context.Context, caller Caller, id int64, ev Event) (TransitionResult, error) {
	if !slices.Contains(RouteEvents, ev) {
		return TransitionResult{}, fmt.Errorf("jobbus: %q is not a route event", ev)
	}
	return b.apply(ctx, id, ev, caller.KeyID, nil, func(d Detail) error {
		if !Owns(caller, d) {
			return b.refusal(d)
		}
		return nil
	})
}

// TransitionByHash applies one of RouteEvents for the holder of the edit hash.
func (b *Business) TransitionByHash(ctx context.Context, hash string, ev Event) (TransitionResult, error) {
	if !slices.Contains(RouteEvents, ev) {
		return TransitionResult{}, fmt.Errorf("jobbus: %q is not a route event", ev)
	}
	d, err := b.QueryByHash(ctx, hash)
	if err != nil {
		return TransitionResult{}, err
	}
	return b.apply(ctx, d.ID, ev, 0, nil, nil)
}

// Pay records a payment and applies EventPaid. A payment already recorded
// (a provider's replayed notification) changes nothing.
func (b *Business) Pay(ctx context.Context, p Payment) (TransitionResult, error) {
	if err := p.validate(); err != nil {
		return TransitionResult{}, err
	}
	return b.apply(ctx, p.JobID, EventPaid, 0, &p, nil)
}

// apply decides ev for the job under its row lock and persists the change,
// in one transaction (with the payment, when there is one); keyID is the
// API key that asked (0: the edit link's holder, a payment).
func (b *Business) apply(ctx context.Context, id int64, ev Event, keyID int64, pay *Payment, check func(Detail) error) (TransitionResult, error) {
	var res TransitionResult
	err := b.store.Tx.InTx(ctx, func(s Stores) error {
		d, err := s.Jobs.QueryByID(ctx, id, Reader{KeyID: keyID, Latest: true, Lock: true})
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(d); err != nil {
				return err
			}
		}
		c, err := decide(facts{job: d, now: b.now()}, ev)
		if err != nil {
			var ce *ConflictError
			if errors.As(err, &ce) && needsPayment(facts{job: d, now: b.now()}, ev) {
				u := b.paymentURL(d.HashIdentifier)
				ce.PaymentURL = &u
			}
			return err
		}
		if pay != nil {
			recorded, err := s.Jobs.RecordPayment(ctx, *pay, c.Action)
			if err != nil {
				return err
			}
			if !recorded { // a provider's replayed notification
				res = TransitionResult{JobID: d.ID, Status: d.Status, Action: ActionReplayed, Job: d}
				return nil
			}
			c.Payment = pay
		}
		res = TransitionResult{JobID: d.ID, Status: c.To, Action: c.Action, Job: d}
		if c.Writes() {
			if res.Job, err = s.Jobs.Apply(ctx, c); err != nil {
				return err
			}
			res.Changed = c.To != c.From || c.MarkPaid() || c.NewPeriod() || c.RestartClock()
		}
		return nil
	})
	if err != nil {
		return TransitionResult{}, err
	}
	return res, nil
}

// Edited is a validated edit, ready to store.
type Edited struct {
	Title, Company, Description, JobType, Tags, Slug string
	// Fingerprint follows the title and company, so that the next post of
	// the job as it now reads updates it, and one of its old title does not.
	Fingerprint    string
	ApplyURL       *string
	IsRemote       bool
	WorkplaceType  string
	SalMin, SalMax *int64
	SalaryPeriod   string
	Currency       string
}

// Edit applies the poster's edit of a job (found by its edit hash) with the
// create request's field rules. ErrDuplicate when the owner has another job
// that now reads the same (its fingerprint).
func (b *Business) Edit(ctx context.Context, hash string, in EditInput) (Detail, error) {
	d, err := b.QueryByHash(ctx, hash)
	if err != nil {
		return Detail{}, err
	}
	e := Edited{Title: d.Title, Company: d.Company, Description: d.Description, JobType: d.JobType, Tags: d.Tags,
		ApplyURL: d.ApplyURL, IsRemote: d.IsRemote, WorkplaceType: d.WorkplaceType, SalMin: d.SalMin, SalMax: d.SalMax,
		SalaryPeriod: d.SalaryPeriod, Currency: d.Currency}
	var p []string
	if in.Title != nil {
		e.Title = requiredText(in.Title, "title", MaxTitleLen, &p)
	}
	if in.Company != nil {
		e.Company = requiredText(in.Company, "company", MaxCompanyLen, &p)
	}
	if in.Description != nil {
		e.Description = description(*in.Description, &p)
	}
	if in.JobType != nil {
		e.JobType = jobType(*in.JobType, &p)
	}
	if in.Tags != nil {
		e.Tags = tags(*in.Tags, &p)
	}
	if in.ApplyURL != nil {
		e.ApplyURL = nil
		if strings.TrimSpace(*in.ApplyURL) != "" {
			u, ok := ApplyURL(*in.ApplyURL)
			if !ok {
				p = append(p, "apply_url must be an absolute http or https URL or a mailto: link")
			}
			e.ApplyURL = &u
		}
	}
	e.WorkplaceType = workplace(in.WorkplaceType, in.IsRemote, d.WorkplaceType, &p)
	e.IsRemote = e.WorkplaceType == WorkplaceRemote
	e.SalaryPeriod = salaryPeriod(in.SalaryPeriod, d.SalaryPeriod, &p)
	if in.Currency != nil {
		e.Currency = currency(*in.Currency, &p)
	}
	if in.SalMin != nil || in.SalMax != nil || in.ClearSalary {
		e.SalMin, e.SalMax = in.SalMin, in.SalMax
		salary(e.SalMin, e.SalMax, &p)
	}
	if len(p) > 0 {
		return Detail{}, &validate.Error{What: "job", Problems: p}
	}
	e.Slug = Slug(e.Title, d.CitySlug)
	e.Fingerprint = Fingerprint(e.Title, e.Company, d.CityID, d.ExternalURL)
	saved, err := b.store.Jobs.Edit(ctx, d.ID, e)
	if errors.Is(err, ErrDuplicate) {
		return Detail{}, &validate.Error{What: "job", Problems: []string{
			"title and company: another job of the same poster in this city with this URL already has them; close that job or choose another title"}}
	}
	if err != nil {
		return Detail{}, err
	}
	return saved, nil
}

func description(v string, p *[]string) string {
	switch {
	case strings.TrimSpace(v) == "":
		*p = append(*p, "description is required")
	case utf8.RuneCountInString(v) > MaxDescriptionLen:
		*p = append(*p, fmt.Sprintf("description must be at most %d characters", MaxDescriptionLen))
	default:
		d := SanitizeDescription(v)
		if Summary(d, 10) == "" {
			*p = append(*p, "description has no text left after removing disallowed HTML")
		}
		return d
	}
	return ""
}

func jobType(v string, p *[]string) string {
	t := strings.ToLower(strings.TrimSpace(v))
	switch {
	case t == "":
		*p = append(*p, "job_type is required")
	case !ValidJobType(t):
		*p = append(*p, "job_type must be one of "+strings.Join(JobTypes, ", "))
	}
	return t
}

func tags(v string, p *[]string) string {
	if strings.TrimSpace(v) == "" {
		*p = append(*p, "tags is required")
		return ""
	}
	plainLine(v, "tags", p)
	ts := NormalizeTags(v)
	switch {
	case len(ts) == 0:
		*p = append(*p, "tags must contain at least one non-empty tag")
	case len(ts) > MaxTags:
		*p = append(*p, fmt.Sprintf("tags must contain at most %d tags", MaxTags))
	default:
		for _, t := range ts {
			if utf8.RuneCountInString(t) > MaxTagLen {
				*p = append(*p, fmt.Sprintf("each tag must be at most %d characters", MaxTagLen))
				break
			}
		}
	}
	return strings.Join(ts, ",")
}

func currency(v string, p *[]string) string {
	c := strings.ToUpper(strings.TrimSpace(v))
	if c == "" {
		return DefaultCurrency
	}
	if !slices.Contains(Currencies, c) {
		*p = append(*p, "currency must be one of "+strings.Join(Currencies, ", "))
	}
	return c
}

func salary(lo, hi *int64, p *[]string) {
	ok := true
	for _, s := range []struct {
		name string
		v    *int64
	}{{"sal_min", lo}, {"sal_max", hi}} {
		if s.v != nil && (*s.v < 0 || *s.v > MaxSalary) {
			*p = append(*p, fmt.Sprintf("%s must be between 0 and %d", s.name, MaxSalary))
			ok = false
		}
	}
	if ok && lo != nil && hi != nil && *lo > *hi {
		*p = append(*p, "sal_min must not exceed sal_max")
	}
}

// MaxSpaceJobs bounds the jobs SpaceJobs returns.
const MaxSpaceJobs = 500

// SpaceJobs returns a space's jobs in every status, newest first (at most
// MaxSpaceJobs), for its dashboard.
func (b *Business) SpaceJobs(ctx context.Context, spaceID int64) ([]Detail, error) {
	return b.store.Jobs.QueryBySpace(ctx, spaceID, MaxSpaceJobs)
}

// Actions lists the RouteEvents that would change job d now, as the table
// decides them (a refused event or an "already" one is left out): the
// buttons a dashboard shows.
func (b *Business) Actions(d Detail) []Event {
	var out []Event
	f := facts{job: d, now: b.now()}
	for _, ev := range RouteEvents {
		if c, err := decide(f, ev); err == nil && c.Writes() {
			out = append(out, ev)
		}
	}
	return out
}
