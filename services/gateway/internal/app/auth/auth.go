// Package auth turns the API key a request presents into the caller the
// backends are told of: it reads the key, answers 401/403/503 in the
// envelope, enforces a route's scopes and the read-only rule of restricted
// keys, and keeps the key out of what is forwarded or cached.
package auth

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/routes"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// Authenticator checks presented keys against the key business.
type Authenticator struct {
	keys *keybus.Business
	log  *slog.Logger
}

// New returns an Authenticator over keys; log gets the storage failures.
func New(keys *keybus.Business, log *slog.Logger) *Authenticator {
	return &Authenticator{keys: keys, log: log}
}

const (
	localsKeyID = "gateway.key_id"
	localsKey   = "gateway.key"
)

// Key is the key the request was authenticated with (nil: none), for the
// gateway's own handlers (the key API).
func Key(c *fiber.Ctx) *keybus.Key {
	k, _ := c.Locals(localsKey).(*keybus.Key)
	return k
}

// KeyID is the id of the key the request was authenticated with (0: none),
// for the access log.
func KeyID(c *fiber.Ctx) int64 {
	id, _ := c.Locals(localsKeyID).(int64)
	return id
}

// presentedKey picks the key from the request. Precedence when several are
// sent: X-API-Key, then Authorization: Bearer, then ?api_key=.
func presentedKey(c *fiber.Ctx) string {
	if k := c.Get("X-API-Key"); k != "" {
		return strings.TrimSpace(k)
	}
	if auth := c.Get(fiber.HeaderAuthorization); auth != "" {
		scheme, token, ok := strings.Cut(strings.TrimSpace(auth), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(token)
		}
		return "\x00malformed" // an Authorization header of another scheme is not a key
	}
	return c.Query("api_key")
}

// Presented reports whether the request carries a key in any of the three
// places (a malformed Authorization header counts: it is answered 401).
func Presented(c *fiber.Ctx) bool { return presentedKey(c) != "" }

// Authenticate returns the key of a request on the keyed route r, or the
// error to answer: 401 without a valid key, 403 when the key lacks r's
// scopes or r writes and the key is restricted, 503 when keys cannot be read.
func (a *Authenticator) Authenticate(c *fiber.Ctx, r routes.Route) (*keybus.Key, error) {
	key, err := a.keys.Authenticate(c.UserContext(), presentedKey(c))
	switch {
	case errors.Is(err, keybus.ErrMissing):
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="coworkjobs"`)
		return nil, web.Unauthorized("An API key is required: send it in the X-API-Key header")
	case errors.Is(err, keybus.ErrMalformed), errors.Is(err, keybus.ErrUnknown), errors.Is(err, keybus.ErrRevoked):
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="coworkjobs", error="invalid_token"`)
		return nil, web.Unauthorized("The API key is invalid or has been revoked")
	case err != nil:
		a.log.ErrorContext(c.UserContext(), "authenticate", "error", err, "request_id", web.RequestID(c))
		return nil, &web.Error{Status: http.StatusServiceUnavailable, Code: web.CodeServiceUnavailable,
			Message: "Authentication is temporarily unavailable; retry shortly"}
	}
	scopes := r.Scopes
	if r.Public() {
		scopes = r.KeyScopes // a public route's optional key
	}
	if !key.HasAnyScope(scopes) {
		return nil, web.Forbidden("This API key lacks a scope for " + r.Method + " " + r.Path + "; one of: " + strings.Join(scopes, ", "))
	}
	if r.Write && !key.Live() {
		return nil, web.Forbidden("Restricted keys (svc_rstr_) are read-only")
	}
	c.Locals(localsKeyID, key.ID)
	c.Locals(localsKey, key)
	return key, nil
}

// Identity is the caller as the backends are told of it: public, or the
// grants of key when the request was authenticated (key not nil).
func Identity(c *fiber.Ctx, key *keybus.Key) identity.Identity {
	id := identity.Identity{Kind: identity.KindPublic, ClientIP: c.IP(), RequestID: web.RequestID(c)}
	if key == nil {
		return id
	}
	id.Kind = identity.KindRestricted
	if key.Live() {
		id.Kind = identity.KindLive
	}
	id.KeyID, id.SpaceID, id.Scopes, id.TrustedImporter = key.ID, key.SpaceID, key.Scopes, key.TrustedImporter
	return id
}

// WithoutAPIKey drops api_key parameters from a raw query string and keeps
// every other byte as the client sent it (re-encoding would change a%20b to
// a+b, and signatures or caches downstream may care).
func WithoutAPIKey(q []byte) []byte {
	if !bytes.Contains(q, []byte("api_key")) {
		return q
	}
	out := make([]byte, 0, len(q))
	for _, part := range bytes.Split(q, []byte("&")) {
		name, _, _ := bytes.Cut(part, []byte("="))
		if decoded, err := url.QueryUnescape(string(name)); err == nil && decoded == "api_key" {
			continue
		}
		if len(part) == 0 {
			continue
		}
		if len(out) > 0 {
			out = append(out, '&')
		}
		out = append(out, part...)
	}
	return out
}
