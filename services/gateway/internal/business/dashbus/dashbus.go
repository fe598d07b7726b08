// Package dashbus holds the rules of the space dashboard's sign-in: one-time
// links mailed to the spaces' admins, and the server-side sessions they open.
//
// Asking for a link costs the same whether or not the address administers a
// space: every request that passes the limits queues a link's mail in the
// outbox, and only the relay, off the request's path, asks the directory
// whether the address is an admin (no mail otherwise). So neither the answer
// nor its timing says whether an address is known.
//
// A link's token is derived from a random nonce with a server key and only
// its SHA-256 is stored: the database and the outbox never hold a usable
// link, and a token is compared by its hash.
package dashbus

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/mailer"
)

// Errors of sign-in.
var (
	ErrInvalidEmail = errors.New("invalid e-mail address")
	ErrLinkUnknown  = errors.New("sign-in link unknown")
	ErrLinkExpired  = errors.New("sign-in link expired")
	ErrLinkUsed     = errors.New("sign-in link already used")
	ErrNoSession    = errors.New("no session")
	ErrNotFound     = errors.New("not found")
)

// SignIn is one requested link.
type SignIn struct {
	ID        int64
	Email     string
	Nonce     []byte
	TokenHash []byte
	ClientIP  string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	// MailedAt is when its mail was last queued.
	MailedAt time.Time
}

// Session is a signed-in dashboard user.
type Session struct {
	ID        int64
	TokenHash []byte
	Email     string
	CSRF      []byte
	ClientIP  string
	CreatedAt time.Time
	ExpiresAt time.Time
	RevokedAt *time.Time
}

// Membership is a space the signed-in address administers (the directory's).
type Membership struct {
	SpaceID   int64
	Name      string
	Slug      string
	Confirmed bool
	IsPro     bool
	Role      string // owner, admin or editor
}

// Storer is what the rules need from storage.
type Storer interface {
	// InTx runs fn with a Storer inside one transaction.
	InTx(ctx context.Context, fn func(Storer) error) error
	// LockAddress serialises link requests for one address until the
	// transaction ends.
	LockAddress(ctx context.Context, email string) error
	// CountRequests counts the requests client made for email since.
	CountRequests(ctx context.Context, email, client string, since time.Time) (int, error)
	// AddRequest records a request of client for email.
	AddRequest(ctx context.Context, email, client string, at time.Time) error
	// Outstanding is email's newest unused link that works until at least
	// until, and when its mail was last queued (ErrNotFound: none).
	Outstanding(ctx context.Context, email string, until time.Time) (SignIn, error)
	// LastMailed is when a link mail to email was last queued (zero: never).
	LastMailed(ctx context.Context, email string) (time.Time, error)
	// AddSignIn stores a link and its mail in the outbox.
	AddSignIn(ctx context.Context, s SignIn) (int64, error)
	// Resend queues the mail of link id again, as mailed at.
	Resend(ctx context.Context, id int64, at time.Time) error
	SignInByID(ctx context.Context, id int64) (SignIn, error)
	SignInByHash(ctx context.Context, hash []byte) (SignIn, error)
	// UseSignIn marks a link used and stores the session it opens, in one
	// transaction; false when it was used or expired meanwhile.
	UseSignIn(ctx context.Context, id int64, at time.Time, s Session) (bool, error)
	SessionByHash(ctx context.Context, hash []byte) (Session, error)
	RevokeSession(ctx context.Context, id int64, at time.Time) error
	// Purge deletes links and sessions that ended before.
	Purge(ctx context.Context, before time.Time) error
}

// Directory tells which spaces an address administers.
type Directory interface {
	AdminSpaces(ctx context.Context, email string) ([]Membership, error)
}

// Config are the sign-in's settings.
type Config struct {
	// Secret derives the links' tokens (at least 32 bytes).
	Secret []byte
	// BaseURL is where the links point (PUBLIC_BASE_URL).
	BaseURL string
	// LinkTTL is how long a link works (15 minutes).
	LinkTTL time.Duration
	// SessionTTL is how long a session lasts (DASHBOARD_SESSION_TTL, 12 h).
	SessionTTL time.Duration
	// LinksPerHour bounds the requests one client makes for one address in
	// an hour (DASHBOARD_LINKS_PER_HOUR): a budget per (address, client), so
	// another client's requests never spend the owner's.
	LinksPerHour int
	// ResendEvery is the least time between two mails to one address
	// (DASHBOARD_LINK_RESEND_EVERY, 2 minutes).
	ResendEvery time.Duration
}

// Business applies the sign-in rules.
type Business struct {
	cfg   Config
	store Storer
	dir   Directory
	mail  mailer.Sender
	log   *slog.Logger
	key   []byte
	now   func() time.Time
}

// New returns the sign-in rules.
func New(cfg Config, store Storer, dir Directory, mail mailer.Sender, log *slog.Logger) (*Business, error) {
	if len(cfg.Secret) < 32 {
		return nil, errors.New("dashboard: the link secret must be at least 32 bytes")
	}
	if cfg.LinkTTL <= 0 {
		cfg.LinkTTL = 15 * time.Minute
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.LinksPerHour <= 0 {
		cfg.LinksPerHour = 5
	}
	if cfg.ResendEvery <= 0 {
		cfg.ResendEvery = 2 * time.Minute
	}
	m := hmac.New(sha256.New, cfg.Secret)
	m.Write([]byte("coworkjobs dashboard sign-in link v1"))
	return &Business{cfg: cfg, store: store, dir: dir, mail: mail, log: log, key: m.Sum(nil), now: time.Now}, nil
}

// SessionTTL is how long a session lasts.
func (b *Business) SessionTTL() time.Duration { return b.cfg.SessionTTL }

// NormalizeEmail checks an address typed into the form and returns it in
// the form links are counted and looked up by (lower case, trimmed).
func NormalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if len(s) > 254 || !strings.Contains(s, "@") {
		return "", ErrInvalidEmail
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return "", ErrInvalidEmail
	}
	return strings.ToLower(s), nil
}

// token derives a link's token from its nonce.
func (b *Business) token(nonce []byte) string {
	m := hmac.New(sha256.New, b.key)
	m.Write(nonce)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func hash(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// RequestLink queues a sign-in link for email (already normalised), asked
// by client (its address). It never locks the address's owner out:
//
//   - while a link is outstanding (unused, with at least half its lifetime
//     left) it is that link's mail that is sent again, not a new link, so
//     the owner's inbox always holds a working link;
//   - an address gets at most one mail per ResendEvery, whoever asks;
//   - each client has its own budget per address (LinksPerHour an hour),
//     so nobody else's requests spend the owner's.
//
// What happened is never said: the caller answers the same in every case.
func (b *Business) RequestLink(ctx context.Context, email, client string) error {
	now := b.now()
	return b.store.InTx(ctx, func(s Storer) error {
		if err := s.LockAddress(ctx, email); err != nil {
			return err
		}
		n, err := s.CountRequests(ctx, email, client, now.Add(-time.Hour))
		if err != nil || n >= b.cfg.LinksPerHour {
			return err
		}
		if err := s.AddRequest(ctx, email, client, now); err != nil {
			return err
		}
		last, err := s.LastMailed(ctx, email)
		if err != nil || now.Sub(last) < b.cfg.ResendEvery {
			return err
		}
		link, err := s.Outstanding(ctx, email, now.Add(b.cfg.LinkTTL/2))
		switch {
		case err == nil:
			return s.Resend(ctx, link.ID, now)
		case !errors.Is(err, ErrNotFound):
			return err
		}
		nonce := make([]byte, 16)
		if _, err := rand.Read(nonce); err != nil {
			return fmt.Errorf("random: %w", err)
		}
		_, err = s.AddSignIn(ctx, SignIn{Email: email, Nonce: nonce, TokenHash: hash(b.token(nonce)), ClientIP: client,
			CreatedAt: now, ExpiresAt: now.Add(b.cfg.LinkTTL), MailedAt: now})
		return err
	})
}

// LinkURL is the link a sign-in's mail carries.
func (b *Business) LinkURL(s SignIn) string {
	return b.cfg.BaseURL + "/dashboard/sign-in/link?token=" + b.token(s.Nonce)
}

// DeliverSignIn sends the mail of a queued link when its address
// administers a space (the outbox relay calls it; a retry sends it again).
// A link that expired or was used meanwhile is not sent: it would not work.
func (b *Business) DeliverSignIn(ctx context.Context, id int64) error {
	s, err := b.store.SignInByID(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if s.UsedAt != nil || !b.now().Before(s.ExpiresAt) {
		b.log.WarnContext(ctx, "dashboard sign-in mail dropped: its link expired before it could be sent", "sign_in", id)
		return nil
	}
	spaces, err := b.dir.AdminSpaces(ctx, s.Email)
	if err != nil {
		return fmt.Errorf("admin spaces: %w", err)
	}
	if len(spaces) == 0 {
		return nil
	}
	names := make([]string, 0, len(spaces))
	for _, sp := range spaces {
		names = append(names, sp.Name)
	}
	link := b.LinkURL(s)
	mins := int(b.cfg.LinkTTL.Minutes())
	text := fmt.Sprintf("Sign in to the coworkjobs dashboard of %s:\n\n%s\n\n"+
		"The link works once, for %d minutes. If you did not ask for it, ignore this mail: nobody can sign in without it.\n",
		strings.Join(names, ", "), link, mins)
	return b.mail.Send(ctx, mailer.Message{To: s.Email, Subject: "Your coworkjobs dashboard sign-in link", Text: text})
}

// CheckLink reports whether token is a link that works now, without using it.
func (b *Business) CheckLink(ctx context.Context, token string) (SignIn, error) {
	if len(token) != 43 {
		return SignIn{}, ErrLinkUnknown
	}
	s, err := b.store.SignInByHash(ctx, hash(token))
	if errors.Is(err, ErrNotFound) {
		return SignIn{}, ErrLinkUnknown
	}
	if err != nil {
		return SignIn{}, err
	}
	// The row was found by the hash; compare the token itself in constant
	// time against the one its nonce derives.
	if !hmac.Equal([]byte(b.token(s.Nonce)), []byte(token)) {
		return SignIn{}, ErrLinkUnknown
	}
	switch {
	case s.UsedAt != nil:
		return SignIn{}, ErrLinkUsed
	case !b.now().Before(s.ExpiresAt):
		return SignIn{}, ErrLinkExpired
	}
	return s, nil
}

// SignIn uses a link and opens a session; it returns the session and the
// cookie that names it (shown to the browser only).
func (b *Business) SignIn(ctx context.Context, token, ip string) (Session, string, error) {
	link, err := b.CheckLink(ctx, token)
	if err != nil {
		return Session{}, "", err
	}
	cookie, secret := make([]byte, 32), make([]byte, 32)
	if _, err := rand.Read(cookie); err != nil {
		return Session{}, "", fmt.Errorf("random: %w", err)
	}
	if _, err := rand.Read(secret); err != nil {
		return Session{}, "", fmt.Errorf("random: %w", err)
	}
	raw := base64.RawURLEncoding.EncodeToString(cookie)
	now := b.now()
	s := Session{TokenHash: hash(raw), Email: link.Email, CSRF: secret, ClientIP: ip, CreatedAt: now, ExpiresAt: now.Add(b.cfg.SessionTTL)}
	ok, err := b.store.UseSignIn(ctx, link.ID, now, s)
	if err != nil {
		return Session{}, "", err
	}
	if !ok {
		return Session{}, "", ErrLinkUsed // two tabs at once: one wins
	}
	return s, raw, nil
}

// Session returns the live session a cookie names.
func (b *Business) Session(ctx context.Context, cookie string) (Session, error) {
	if cookie == "" || len(cookie) > 64 {
		return Session{}, ErrNoSession
	}
	s, err := b.store.SessionByHash(ctx, hash(cookie))
	if errors.Is(err, ErrNotFound) {
		return Session{}, ErrNoSession
	}
	if err != nil {
		return Session{}, err
	}
	if s.RevokedAt != nil || !b.now().Before(s.ExpiresAt) {
		return Session{}, ErrNoSession
	}
	return s, nil
}

// SignOut ends a session.
func (b *Business) SignOut(ctx context.Context, s Session) error {
	return b.store.RevokeSession(ctx, s.ID, b.now())
}

// CSRFToken is the token the session's forms carry.
func CSRFToken(s Session) string { return base64.RawURLEncoding.EncodeToString(s.CSRF) }

// CheckCSRF reports whether a form's token is the session's.
func CheckCSRF(s Session, token string) bool {
	return hmac.Equal([]byte(CSRFToken(s)), []byte(token))
}

// Memberships lists the spaces the session's address administers.
func (b *Business) Memberships(ctx context.Context, s Session) ([]Membership, error) {
	return b.dir.AdminSpaces(ctx, s.Email)
}

// Membership returns the session's membership of one space; ErrNotFound
// when its address does not administer it (the page answers 404, as for a
// space that does not exist).
func (b *Business) Membership(ctx context.Context, s Session, spaceID int64) (Membership, error) {
	all, err := b.Memberships(ctx, s)
	if err != nil {
		return Membership{}, err
	}
	for _, m := range all {
		if m.SpaceID == spaceID {
			return m, nil
		}
	}
	return Membership{}, ErrNotFound
}

// Purge deletes what ended a day ago or more.
func (b *Business) Purge(ctx context.Context) error {
	return b.store.Purge(ctx, b.now().Add(-24*time.Hour))
}
