// Package alertbus is the rules of job alerts (issue 36): a job seeker saves
// a GET /v2/jobs search with an address, confirms it by a click in the mail
// (double opt-in, as the newsletter), and hears of each job that becomes
// visible and that the search lists, once per (alert, job).
package alertbus

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time_zone is validated the same on a machine without a zoneinfo
	"unicode"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Frequencies of an alert.
const (
	Instant = "instant"
	Daily   = "daily"
	Weekly  = "weekly"
)

// UnconfirmedTTL is how long an unconfirmed alert is kept.
const UnconfirmedTTL = 48 * time.Hour

// Purposes of an alert's links.
const (
	PurposeConfirm = "confirm"
	PurposeManage  = "manage"
	PurposeFeed    = "feed"
)

var (
	ErrNotFound = errors.New("alert not found")
	ErrBadToken = errors.New("alert token invalid")
)

// SearchParams are the query parameters of GET /v2/jobs an alert keeps.
var SearchParams = []string{"q", "city", "job_type", "remote", "tag", "near", "radius_km", "currency", "salary_min", "workplace_type"}

// Alert is one saved search.
type Alert struct {
	ID          int64
	Email       string
	Search      string // canonical query string
	Frequency   string
	TimeZone    string
	Nonce       string
	ConfirmedAt *time.Time
	Paused      bool
	KeyID       int64
	CreatedAt   time.Time
}

// Canonical is the search's query string with only SearchParams, keys
// sorted (url.Values.Encode sorts), empty values dropped: one address and
// one search are one alert however the form was written.
func Canonical(get func(string) string) string {
	v := url.Values{}
	for _, k := range SearchParams {
		if s := strings.TrimSpace(get(k)); s != "" {
			v.Set(k, s)
		}
	}
	return v.Encode()
}

// PercolationKey is the search's most selective criterion a job can be
// looked up by: its city, else its tag, else one of its words (WordKey),
// else "" (compared with every job).
func PercolationKey(f jobbus.ListFilter) string {
	switch {
	case f.CitySlug != "":
		return "city:" + f.CitySlug
	case f.Tag != "":
		return "tag:" + f.Tag
	}
	return WordKey(f.Search)
}

// WordKey is the key of a search by one of its words, every one of which a
// listed job must match: "word:<word>:<P|E><typos>", the word with how the
// search reads it (P: also as a prefix, the last word being typed; the typos
// it forgives), so that the matching can ask PostgreSQL, with the search's
// own term_queries, whether a job matches that word at all. The longest word
// is kept (the rarest, as a rule), a whole word before the prefix one. ""
// when the search has no word (phrases or exclusions only).
func WordKey(s jobbus.Search) string {
	best := -1
	for i, w := range s.Words {
		if best < 0 || (s.Prefix[best] && !s.Prefix[i]) ||
			(s.Prefix[best] == s.Prefix[i] && utf8.RuneCountInString(w) > utf8.RuneCountInString(s.Words[best])) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	mode := "E"
	if s.Prefix[best] {
		mode = "P"
	}
	return "word:" + s.Words[best] + ":" + mode + strconv.Itoa(s.Fuzz[best])
}

// JobKeys are the percolation keys a job answers to ("" included); the
// word keys it answers to are asked of PostgreSQL (alertdb), since typos,
// stems and prefixes make a word match more than its own lexeme.
func JobKeys(citySlug string, tags []string) []string {
	keys := make([]string, 0, len(tags)+2)
	keys = append(keys, "")
	if citySlug != "" {
		keys = append(keys, "city:"+citySlug)
	}
	for _, t := range tags {
		keys = append(keys, "tag:"+t)
	}
	return keys
}

// Broad reports a search with no criterion at all (every job would match).
func Broad(f jobbus.ListFilter) bool {
	return f.Search.Empty() && f.CitySlug == "" && f.Tag == "" && f.JobType == "" && !f.Remote && f.Near == nil &&
		f.SalaryMin == nil && f.Currency == "" && f.WorkplaceType == ""
}

// NewNonce is a fresh nonce for an alert's links.
func NewNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Signer makes and checks an alert's links: "<id>.<mac>" with the mac over
// (purpose, id, nonce), so no token is stored and a new nonce voids them.
type Signer struct{ secret []byte }

func NewSigner(secret []byte) *Signer { return &Signer{secret: secret} }

func (s *Signer) mac(purpose string, id int64, nonce string) string {
	h := hmac.New(sha256.New, s.secret)
	h.Write([]byte(purpose + "\x00" + strconv.FormatInt(id, 10) + "\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:24])
}

// Token is the link token of purpose for a.
func (s *Signer) Token(purpose string, a Alert) string {
	return strconv.FormatInt(a.ID, 10) + "." + s.mac(purpose, a.ID, a.Nonce)
}

// ParseToken returns the alert id a token names (checked by Verify once the
// alert's nonce is read).
func ParseToken(tok string) (int64, string, bool) {
	ids, mac, ok := strings.Cut(tok, ".")
	if !ok || len(ids) > 19 || len(mac) > 64 {
		return 0, "", false
	}
	id, err := strconv.ParseInt(ids, 10, 64)
	if err != nil || id <= 0 {
		return 0, "", false
	}
	return id, mac, true
}

// Verify reports whether mac is a's for purpose (constant time).
func (s *Signer) Verify(purpose string, a Alert, mac string) bool {
	return hmac.Equal([]byte(mac), []byte(s.mac(purpose, a.ID, a.Nonce)))
}

// AlertExport is one alert as an address's export shows it (docs/privacy.md).
type AlertExport struct {
	Search      string     `json:"search"`
	Frequency   string     `json:"frequency"`
	TimeZone    string     `json:"time_zone"`
	Paused      bool       `json:"paused"`
	CreatedAt   time.Time  `json:"created_at"`
	ConfirmedAt *time.Time `json:"confirmed_at"`
	Matches     int        `json:"matches"`
	Mailed      int        `json:"matches_mailed"`
}

// Store is what the rules need of storage.
type Store interface {
	// Save creates the alert of (email, search) or, when it exists, returns
	// it (frequency and time zone updated while unconfirmed) and, unless
	// confirmed, queues the address's confirmation mail within lim; created
	// reports a new row.
	Save(ctx context.Context, a Alert, pkey string, lim ConfirmLimits) (Alert, bool, error)
	// Pending lists the unconfirmed alerts of the address of alert id.
	Pending(ctx context.Context, id int64, limit int) ([]Alert, error)
	Get(ctx context.Context, id int64) (Alert, error)
	Confirm(ctx context.Context, id int64) error
	Update(ctx context.Context, id int64, frequency *string, paused *bool) error
	Delete(ctx context.Context, id int64) error
	// DeleteAddress deletes every alert of an address (erasure) and reports how many.
	DeleteAddress(ctx context.Context, email string) (int, error)
	Matches(ctx context.Context, id int64, limit int) ([]int64, error)
}

// CityZones finds a city's IANA time zone by its slug ("" when unknown).
type CityZones interface {
	CityZone(ctx context.Context, slug string) (string, error)
}

// DefaultZone is an alert's zone when neither it nor its city gives one.
const DefaultZone = "UTC"

// ConfirmLimits bound the confirmation mails an address receives, so that
// nobody can make the board mail a stranger over and over (issue 44): one
// mail at a time lists every pending search of the address, the next one
// at least Every later, at most PerDay a UTC day.
type ConfirmLimits struct {
	Every  time.Duration // ALERT_CONFIRM_EVERY
	PerDay int           // ALERT_CONFIRMS_PER_DAY
}

// Default confirmation limits.
const (
	DefaultConfirmEvery  = 10 * time.Minute
	MaxPendingShown      = 20 // pending searches one confirmation lists
	DefaultConfirmPerDay = 5
)

// Business holds the alerts' rules.
type Business struct {
	Store  Store
	Signer *Signer
	Zones  CityZones     // nil: an alert without time_zone keeps DefaultZone
	Limits ConfirmLimits // zero fields: the defaults
}

// limits are b's confirmation limits, defaults filled in.
func (b *Business) limits() ConfirmLimits {
	l := b.Limits
	if l.Every <= 0 {
		l.Every = DefaultConfirmEvery
	}
	if l.PerDay <= 0 {
		l.PerDay = DefaultConfirmPerDay
	}
	return l
}

// CheckText refuses control characters (line breaks included) in any of a
// search's fields: they would only serve to shape a mail's text.
func CheckText(fields map[string]string) []string {
	var p []string
	for _, k := range SearchParams {
		if strings.IndexFunc(fields[k], unicode.IsControl) >= 0 {
			p = append(p, k+" must not contain control characters")
		}
	}
	return p
}

// Summary is a search as a confirmation mail shows it to an address that
// has not confirmed anything yet: only what the search matches by (its
// words, letters and digits only; the city and tag slugs; the filters),
// never the free text as typed, so that no link or sentence of a
// stranger's can be carried to the address.
func Summary(f jobbus.ListFilter) string {
	var parts []string
	words := slices.Clone(f.Search.Words)
	for _, ph := range f.Search.Phrases {
		words = append(words, strings.FieldsFunc(ph, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })...)
	}
	if len(words) > 0 {
		parts = append(parts, "words "+strings.Join(words, " "))
	}
	if f.CitySlug != "" {
		parts = append(parts, "city "+f.CitySlug)
	}
	if f.Tag != "" {
		parts = append(parts, "tag "+f.Tag)
	}
	if f.JobType != "" {
		parts = append(parts, "job type "+f.JobType)
	}
	if f.Remote {
		parts = append(parts, "remote")
	}
	if f.WorkplaceType != "" {
		parts = append(parts, "worked "+strings.ReplaceAll(f.WorkplaceType, "_", " "))
	}
	if f.Near != nil {
		parts = append(parts, "near a place you gave")
	}
	if f.SalaryMin != nil {
		parts = append(parts, "salary from "+strconv.FormatInt(*f.SalaryMin, 10)+" "+f.Currency)
	}
	if len(parts) == 0 {
		return "(a search)"
	}
	return strings.Join(parts, ", ")
}

// NewAlert is what POST /v2/alerts asks for, already validated.
type NewAlert struct {
	Email     string
	Search    string // Canonical
	Filter    jobbus.ListFilter
	Frequency string
	TimeZone  string // IANA, validated; "": the city's, else DefaultZone
	KeyID     int64
}

// Save stores (or finds) the alert; the store queues its confirmation mail.
// An alert without a zone takes its city's (its digests come at the city's
// morning).
func (b *Business) Save(ctx context.Context, n NewAlert) (Alert, error) {
	if n.TimeZone == "" && n.Filter.CitySlug != "" && b.Zones != nil {
		tz, err := b.Zones.CityZone(ctx, n.Filter.CitySlug)
		if err != nil {
			return Alert{}, err
		}
		n.TimeZone = tz
	}
	if n.TimeZone == "" {
		n.TimeZone = DefaultZone
	}
	a, _, err := b.Store.Save(ctx, Alert{Email: n.Email, Search: n.Search, Frequency: n.Frequency, TimeZone: n.TimeZone,
		Nonce: NewNonce(), KeyID: n.KeyID}, PercolationKey(n.Filter), b.limits())
	return a, err
}

// Resolve returns the alert a link token of purpose names: ErrBadToken
// for a malformed or forged token, or one of a deleted alert.
func (b *Business) Resolve(ctx context.Context, purpose, tok string) (Alert, error) {
	id, mac, ok := ParseToken(tok)
	if !ok {
		return Alert{}, ErrBadToken
	}
	a, err := b.Store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Alert{}, ErrBadToken
	}
	if err != nil {
		return Alert{}, err
	}
	if !b.Signer.Verify(purpose, a, mac) {
		return Alert{}, ErrBadToken
	}
	return a, nil
}

// Confirm confirms alert id (its mails start) and returns it as stored.
func (b *Business) Confirm(ctx context.Context, id int64) (Alert, error) {
	if err := b.Store.Confirm(ctx, id); err != nil {
		return Alert{}, err
	}
	return b.Store.Get(ctx, id)
}

// Update sets the alert's frequency and/or pause (nil: unchanged) and
// returns it as stored.
func (b *Business) Update(ctx context.Context, id int64, frequency *string, paused *bool) (Alert, error) {
	if err := b.Store.Update(ctx, id, frequency, paused); err != nil {
		return Alert{}, err
	}
	return b.Store.Get(ctx, id)
}

// Delete deletes the alert (its address too, when no other alert holds
// it); an alert already gone is no error: an unsubscribe link works twice.
func (b *Business) Delete(ctx context.Context, id int64) error {
	if err := b.Store.Delete(ctx, id); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// Matches are the ids of the newest limit jobs the alert matched, for its
// feed.
func (b *Business) Matches(ctx context.Context, id int64, limit int) ([]int64, error) {
	return b.Store.Matches(ctx, id, limit)
}
