// Package importbus holds the rules of feed-pull import sources: who owns
// one (the registering key's space, or a key without a space itself, as a
// batch's jobs are owned), what a valid source is, and a poll: a
// conditional GET of the source's feed (feeds.Fetch, through libs/outbound
// as webhook deliveries are), then its positions applied as a replace
// scoped to the source (jobbus.ApplySource). Polls run in Temporal
// (workflows/importsync); the API's changes wake them through an outbox.
package importbus

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/libs/outbound"
	"github.com/coworkjobs/coworkjobs/libs/validate"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/importbus/feeds"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Limits of the sources' rules.
const (
	MinInterval     = 15 * time.Minute
	MaxInterval     = 7 * 24 * time.Hour
	DefaultInterval = time.Hour
	MaxSources      = 20 // per owner
	MaxURLLen       = 2000
	MaxTokenLen     = 200
	MaxTextLen      = 200
	// MaxPositions is the most positions a poll applies (a batch
	// operation's rows); a larger feed is that run's error.
	MaxPositions = jobbus.MaxBatchAsyncRows
	// ModeReplace is the only mode: the feed is everything the source has.
	ModeReplace = "replace"
)

// Sentinel errors the handlers map to envelope codes.
var (
	ErrNotFound = errors.New("import source not found")
	ErrTooMany  = errors.New("too many import sources")
	// ErrPlan: a space key's space is not a confirmed Pro space.
	ErrPlan = errors.New("import sources are included in the Pro plan")
)

// Owner is whose sources a caller manages: a space key its space's, a key
// without a space its own (SpaceID 0).
type Owner struct {
	SpaceID int64
	KeyID   int64
}

// OwnerOf is caller's owner.
func OwnerOf(c jobbus.Caller) Owner { return Owner{SpaceID: c.SpaceID, KeyID: c.KeyID} }

// Source is one registered feed.
type Source struct {
	ID             int64
	SpaceID, KeyID int64
	Trusted        bool // the registering key was a trusted importer
	Kind           string
	Token, URL     string
	FeedURL        string // what is fetched: URL, or the kind's API for Token
	// Defaults for what positions do not say (feeds.Defaults).
	Company, CityName, Tags string
	Interval                time.Duration
	Mode                    string
	Validators              feeds.Validators
	NextPollAt              time.Time
	LastPolledAt            *time.Time
	LastError               *string
	CreatedAt               time.Time
	LastRun                 *Run // in listings and reads
}

func (s Source) caller() jobbus.Caller {
	return jobbus.Caller{KeyID: s.KeyID, SpaceID: s.SpaceID, TrustedImporter: s.Trusted}
}

// RowError is a position the poll could not apply: its index in the feed,
// the source's own id for it, and the create rules' messages.
type RowError struct {
	Index  int      `json:"index"`
	Ref    string   `json:"ref"`
	Errors []string `json:"errors"`
}

// Run is one poll of a source.
type Run struct {
	ID                                          int64
	SourceID                                    int64
	StartedAt, FinishedAt                       time.Time
	NotModified                                 bool // the source answered 304: nothing was written
	Positions                                   int
	Created, Updated, Unchanged, Closed, Errors int
	RowErrors                                   []RowError
	Error                                       *string // the poll failed (nothing closed)
}

// Input is a register request after decoding; nil fields are absent.
type Input struct {
	Kind, Token, URL, Mode  *string
	Company, CityName, Tags *string
	IntervalMinutes         *int64
}

// Storer is the storage of sources and runs. Every call that takes an
// owner finds sources only among owner's (ErrNotFound otherwise); Create,
// Sync and Delete queue the source's wake-up in their transaction.
type Storer interface {
	Count(ctx context.Context, owner Owner) (int, error)
	Create(ctx context.Context, s Source) (Source, error)
	List(ctx context.Context, owner Owner) ([]Source, error)
	Get(ctx context.Context, owner Owner, id int64) (Source, error)
	Delete(ctx context.Context, owner Owner, id int64) error
	// Sync makes the source due now.
	Sync(ctx context.Context, owner Owner, id int64) (Source, error)
	// Runs are the source's newest runs with id below before (0: any).
	Runs(ctx context.Context, owner Owner, id, before int64, limit int) ([]Run, error)
	// Source is any owner's source, for a poll.
	Source(ctx context.Context, id int64) (Source, error)
	// SaveRun records a poll's run and the source's next poll, with v as its
	// validators when v is not nil.
	SaveRun(ctx context.Context, r Run, v *feeds.Validators, next time.Time) (Run, error)
}

// Jobs applies a poll's positions (jobbus.Business).
type Jobs interface {
	ApplySource(ctx context.Context, caller jobbus.Caller, prefix string, rows []jobbus.CreateInput) (jobbus.BatchResult, error)
}

// Spaces tells a space's plan (the directory).
type Spaces interface {
	Space(ctx context.Context, id int64) (jobbus.Space, bool, error)
}

// Config is what the rules need.
type Config struct {
	// AllowHTTP lets sources use plain http (an operator's choice; make
	// run and the tests serve fixtures locally).
	AllowHTTP bool
	// Allow lists the special addresses fetches may reach
	// (WEBHOOKS_ALLOW_ADDRESSES): a URL naming another literally is refused
	// at registration, as the fetch would refuse it.
	Allow []netip.Prefix
	// Decode reads a POST /v2/jobs body as the API does (the poller's).
	Decode func(body []byte) jobbus.CreateInput
	// Client fetches the feeds (the poller's).
	Client *outbound.Client
}

// Business applies the source rules.
type Business struct {
	store  Storer
	jobs   Jobs
	spaces Spaces
	cfg    Config
	now    func() time.Time
}

// New returns the rules over store; jobs and Config.Decode/Client are
// needed by Poll only (the API registers, the worker polls).
func New(store Storer, jobs Jobs, spaces Spaces, cfg Config) *Business {
	return &Business{store: store, jobs: jobs, spaces: spaces, cfg: cfg, now: time.Now}
}

// plan is the plan rule of statsbus: a key without a space may register
// sources (an importer); a space key when its space is a confirmed Pro
// space.
func (b *Business) plan(ctx context.Context, spaceID int64) error {
	if spaceID == 0 {
		return nil
	}
	if b.spaces == nil {
		return ErrPlan
	}
	sp, ok, err := b.spaces.Space(ctx, spaceID)
	if err != nil {
		return err
	}
	if !ok || !sp.Confirmed || !sp.IsPro {
		return ErrPlan
	}
	return nil
}

// Register checks and keeps a source; it is due at once (its first poll is
// queued with it).
func (b *Business) Register(ctx context.Context, caller jobbus.Caller, in Input) (Source, error) {
	var p []string
	s := Source{SpaceID: caller.SpaceID, KeyID: caller.KeyID, Trusted: caller.TrustedImporter, Mode: ModeReplace, Interval: DefaultInterval}
	if in.Kind == nil {
		p = append(p, "kind is required: one of "+strings.Join(feeds.Kinds, ", "))
	} else if s.Kind = strings.TrimSpace(*in.Kind); !slices.Contains(feeds.Kinds, s.Kind) {
		p = append(p, "kind must be one of "+strings.Join(feeds.Kinds, ", "))
		s.Kind = ""
	}
	if in.Token != nil {
		s.Token = b.checkToken(*in.Token, &p)
	}
	if in.URL != nil {
		s.URL = b.checkURL(*in.URL, &p)
	}
	switch {
	case s.Kind == "":
	case in.Token != nil && in.URL != nil:
		p = append(p, "token and url: give one of them (the board token, or the feed's URL)")
	case s.Kind == feeds.JSON && in.Token != nil:
		p = append(p, "token: the json kind takes a url (a document {\"jobs\": [...]})")
	case in.Token == nil && in.URL == nil:
		if s.Kind == feeds.JSON {
			p = append(p, "url is required for the json kind")
		} else {
			p = append(p, "token or url is required: the "+s.Kind+" board token, or the feed's URL")
		}
	}
	if in.Mode != nil && *in.Mode != ModeReplace {
		p = append(p, "mode must be replace (a source's feed is every job it has; the others it wrote are closed)")
	}
	if in.IntervalMinutes != nil {
		m := time.Duration(*in.IntervalMinutes) * time.Minute
		if *in.IntervalMinutes < int64(MinInterval/time.Minute) || *in.IntervalMinutes > int64(MaxInterval/time.Minute) {
			p = append(p, fmt.Sprintf("interval_minutes must be between %d and %d", int(MinInterval/time.Minute), int(MaxInterval/time.Minute)))
		} else {
			s.Interval = m
		}
	}
	if in.Company != nil {
		s.Company = checkText(*in.Company, "company", &p)
	}
	if s.Company == "" && s.Kind != "" && s.Kind != feeds.JSON {
		p = append(p, "company is required: the company the "+s.Kind+" board's jobs are posted for")
	}
	if in.CityName != nil {
		s.CityName = checkText(*in.CityName, "city_name", &p)
	}
	if in.Tags != nil {
		s.Tags = checkText(*in.Tags, "tags", &p)
	}
	if len(p) == 0 {
		u, err := feeds.Endpoint(s.Kind, s.Token, s.URL)
		if err != nil {
			p = append(p, "token: "+strings.TrimPrefix(err.Error(), feeds.ErrFormat.Error()+": "))
		}
		s.FeedURL = u
	}
	if len(p) > 0 {
		return Source{}, &validate.Error{What: "import source", Problems: p}
	}
	if err := b.plan(ctx, caller.SpaceID); err != nil {
		return Source{}, err
	}
	n, err := b.store.Count(ctx, OwnerOf(caller))
	if err != nil {
		return Source{}, err
	}
	if n >= MaxSources {
		return Source{}, ErrTooMany
	}
	s.NextPollAt = b.now()
	return b.store.Create(ctx, s)
}

// List returns owner's sources, each with its last run.
func (b *Business) List(ctx context.Context, owner Owner) ([]Source, error) {
	return b.store.List(ctx, owner)
}

// Get returns one of owner's sources.
func (b *Business) Get(ctx context.Context, owner Owner, id int64) (Source, error) {
	return b.store.Get(ctx, owner, id)
}

// Delete removes one of owner's sources and its runs (its jobs stay as they
// are) and stops its polls.
func (b *Business) Delete(ctx context.Context, owner Owner, id int64) error {
	return b.store.Delete(ctx, owner, id)
}

// Sync makes one of owner's sources due now and wakes its poller.
func (b *Business) Sync(ctx context.Context, owner Owner, id int64) (Source, error) {
	if _, err := b.store.Get(ctx, owner, id); err != nil {
		return Source{}, err
	}
	if err := b.plan(ctx, owner.SpaceID); err != nil {
		return Source{}, err
	}
	return b.store.Sync(ctx, owner, id)
}

// Runs are a source's newest runs, before the run id before (0: the newest).
func (b *Business) Runs(ctx context.Context, owner Owner, id, before int64, limit int) ([]Run, error) {
	if _, err := b.store.Get(ctx, owner, id); err != nil {
		return nil, err
	}
	return b.store.Runs(ctx, owner, id, before, limit)
}

func (b *Business) checkURL(raw string, p *[]string) string {
	u, why := outbound.Target{MaxLen: MaxURLLen, AllowHTTP: b.cfg.AllowHTTP, Allow: b.cfg.Allow,
		Empty: "url must not be empty", Example: "https://example.com/jobs.json",
		PlainHTTP: "this server does not fetch feeds over plain http", Refused: "feeds are not fetched from there"}.CheckURL(raw)
	if why != "" {
		*p = append(*p, why)
	}
	return u
}

// checkToken: a board's name as the boards spell them in their URLs.
func (b *Business) checkToken(raw string, p *[]string) string {
	s := strings.TrimSpace(raw)
	switch {
	case s == "":
		*p = append(*p, "token must not be empty")
	case len(s) > MaxTokenLen:
		*p = append(*p, fmt.Sprintf("token must be at most %d characters", MaxTokenLen))
	case strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}):
		*p = append(*p, "token must be a board token: letters, digits, '-', '_' and '.' only")
	default:
		return s
	}
	return ""
}

func checkText(raw, name string, p *[]string) string {
	s := strings.Join(strings.Fields(raw), " ")
	switch {
	case !utf8.ValidString(s):
		*p = append(*p, name+" must be valid UTF-8 text")
	case utf8.RuneCountInString(s) > MaxTextLen:
		*p = append(*p, fmt.Sprintf("%s must be at most %d characters", name, MaxTextLen))
	default:
		return s
	}
	return ""
}
