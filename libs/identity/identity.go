// Package identity is the signed statement the gateway (or a calling service)
// attaches to every request it sends to a backend: who the caller is, which
// space and scopes its key carries, and until when the statement holds.
// Backends trust nothing else, so a request that reaches a backend without
// passing the gateway gets a 401.
//
// Wire form (header X-Coworkjobs-Identity): base64url(JSON) "." base64url(HMAC-SHA256).
// HMAC over the encoded payload with a shared secret is enough here: the
// gateway and the backends are one trust domain, and the check costs about a
// microsecond on the hot path.
package identity

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Header carries the signed identity.
const Header = "X-Coworkjobs-Identity"

// Kinds of caller.
const (
	KindPublic     = "public"     // no key: a public route
	KindLive       = "live"       // svc_live_ key: read and write
	KindRestricted = "restricted" // svc_rstr_ key: read only
	KindService    = "service"    // another backend service
)

// Identity is what a backend knows about its caller.
type Identity struct {
	Kind            string   `json:"knd"`
	KeyID           int64    `json:"kid,omitempty"`
	SpaceID         int64    `json:"sid,omitempty"`
	Scopes          []string `json:"scp,omitempty"`
	TrustedImporter bool     `json:"imp,omitempty"`
	ClientIP        string   `json:"ip,omitempty"`
	Service         string   `json:"svc,omitempty"`
	RequestID       string   `json:"rid,omitempty"`
	ExpiresAt       int64    `json:"exp"` // unix milliseconds
}

// HasSpace reports whether the caller's key is scoped to one space.
func (id *Identity) HasSpace() bool { return id.SpaceID != 0 }

// Errors a verifier returns; all of them are answered with 401.
var (
	ErrMissing = errors.New("identity missing")
	ErrForged  = errors.New("identity signature invalid")
	ErrExpired = errors.New("identity expired")
)

// MaxTTL bounds how far in the future an identity may claim to be valid, so a
// leaked header is worthless within seconds.
const MaxTTL = time.Minute

// Codec signs and verifies identities with one shared secret.
type Codec struct {
	pool sync.Pool
	now  func() time.Time
}

// NewCodec returns a codec for secret (at least 32 bytes).
func NewCodec(secret string) (*Codec, error) {
	if len(secret) < 32 {
		return nil, errors.New("identity secret must be at least 32 bytes")
	}
	key := []byte(secret)
	return &Codec{
		pool: sync.Pool{New: func() any { return hmac.New(sha256.New, key) }},
		now:  time.Now,
	}, nil
}

// mac appends the HMAC of payload to dst.
func (c *Codec) mac(dst, payload []byte) []byte {
	h := c.pool.Get().(hash.Hash)
	h.Reset()
	h.Write(payload)
	sum := h.Sum(dst)
	c.pool.Put(h)
	return sum
}

// Sign returns the header value for id, valid for ttl (capped at MaxTTL).
func (c *Codec) Sign(id Identity, ttl time.Duration) (string, error) {
	if ttl <= 0 || ttl > MaxTTL {
		ttl = MaxTTL
	}
	id.ExpiresAt = c.now().Add(ttl).UnixMilli()
	raw, err := json.Marshal(id)
	if err != nil {
		return "", fmt.Errorf("encode identity: %w", err)
	}
	enc := base64.RawURLEncoding
	n := enc.EncodedLen(len(raw))
	out := make([]byte, n, n+1+enc.EncodedLen(sha256.Size))
	enc.Encode(out, raw)
	var sum [sha256.Size]byte
	sig := c.mac(sum[:0], out)
	out = append(out, '.')
	return string(enc.AppendEncode(out, sig)), nil
}

// Verify checks the signature and expiry of a header value.
func (c *Codec) Verify(value string) (*Identity, error) {
	if value == "" {
		return nil, ErrMissing
	}
	dot := strings.IndexByte(value, '.')
	if dot <= 0 || dot == len(value)-1 {
		return nil, ErrForged
	}
	payload, sigText := value[:dot], value[dot+1:]
	sig, err := base64.RawURLEncoding.DecodeString(sigText)
	if err != nil {
		return nil, ErrForged
	}
	if !hmac.Equal(sig, c.mac(nil, []byte(payload))) {
		return nil, ErrForged
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return nil, ErrForged
	}
	var id Identity
	if err := json.Unmarshal(raw, &id); err != nil {
		return nil, ErrForged
	}
	now := c.now().UnixMilli()
	if id.ExpiresAt <= now || id.ExpiresAt > now+MaxTTL.Milliseconds()+5000 {
		return nil, ErrExpired
	}
	switch id.Kind {
	case KindPublic, KindLive, KindRestricted, KindService:
	default:
		return nil, ErrForged
	}
	return &id, nil
}

const localsKey = "coworkjobs.identity"

// Middleware rejects requests without a valid identity (401 in the envelope)
// and stores the identity for handlers (see From).
func (c *Codec) Middleware() fiber.Handler {
	return func(ctx *fiber.Ctx) error {
		id, err := c.Verify(ctx.Get(Header))
		if err != nil {
			return web.Unauthorized("This service is reachable only through the gateway: " + err.Error())
		}
		ctx.Locals(localsKey, id)
		return ctx.Next()
	}
}

// RequireKind admits only the given kinds of caller (internal routes admit
// only other services); others get 403.
func RequireKind(kinds ...string) fiber.Handler {
	return func(ctx *fiber.Ctx) error {
		id := From(ctx)
		for _, k := range kinds {
			if id != nil && id.Kind == k {
				return ctx.Next()
			}
		}
		return web.Forbidden("This route is not available to this caller")
	}
}

// From returns the verified identity of the request (nil before Middleware).
func From(ctx *fiber.Ctx) *Identity {
	id, _ := ctx.Locals(localsKey).(*Identity)
	return id
}
