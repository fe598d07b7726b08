package jobpages

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/csrf"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// csrfField is the hidden form field holding the token; csrfLocal the
// Locals key the middleware leaves it under for the templates.
const (
	csrfField     = "_csrf"
	csrfLocal     = "jobpages.csrf"
	csrfLifetime  = 2 * time.Hour
	csrfKeyLabel  = "coworkjobs jobpages csrf v1"
	csrfPayloadSz = 16 + 8 // random bytes, expiry (unix seconds)
)

// signedTokens is the fiber.Storage behind Fiber's csrf middleware. The
// middleware keeps every token it issued in a store and accepts only those;
// its default store is in memory, so a form served by one replica of the
// jobs service would be refused by another. Here a token carries its own
// expiry and an HMAC of it, and "is it stored" becomes "is it signed by us
// and unexpired": every replica with the same secret accepts it, and nothing
// is written per page view. The double-submit check (form field = cookie)
// stays the middleware's.
type signedTokens struct {
	key []byte
	now func() time.Time
}

// newSignedTokens derives the signing key from the service's secret, so the
// identity secret itself never signs anything but identities.
func newSignedTokens(secret []byte) *signedTokens {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(csrfKeyLabel))
	return &signedTokens{key: m.Sum(nil), now: time.Now}
}

// generate is the middleware's KeyGenerator: base64url(random ‖ expiry).base64url(mac).
func (s *signedTokens) generate() string {
	var p [csrfPayloadSz]byte
	_, _ = rand.Read(p[:16])
	binary.BigEndian.PutUint64(p[16:], uint64(s.now().Add(csrfLifetime).Unix()))
	enc := base64.RawURLEncoding
	return enc.EncodeToString(p[:]) + "." + enc.EncodeToString(s.mac(p[:]))
}

func (s *signedTokens) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(payload)
	return m.Sum(nil)
}

// valid reports whether token is one of ours and not expired.
func (s *signedTokens) valid(token string) bool {
	p64, m64, ok := strings.Cut(token, ".")
	if !ok || len(token) > 128 {
		return false
	}
	enc := base64.RawURLEncoding
	payload, err := enc.DecodeString(p64)
	if err != nil || len(payload) != csrfPayloadSz {
		return false
	}
	sum, err := enc.DecodeString(m64)
	if err != nil || !hmac.Equal(sum, s.mac(payload)) {
		return false
	}
	return int64(binary.BigEndian.Uint64(payload[16:])) > s.now().Unix()
}

// Get implements fiber.Storage: a non-nil value for a valid token.
func (s *signedTokens) Get(key string) ([]byte, error) {
	if s.valid(key) {
		return []byte{1}, nil
	}
	return nil, nil
}

// Set, Delete, Reset and Close implement fiber.Storage: there is nothing to keep.
func (s *signedTokens) Set(string, []byte, time.Duration) error { return nil }
func (s *signedTokens) Delete(string) error                     { return nil }
func (s *signedTokens) Reset() error                            { return nil }
func (s *signedTokens) Close() error                            { return nil }

// newCSRF is Fiber's csrf middleware for the poster's pages: the token in a
// hidden form field, the same token in an HttpOnly SameSite=Strict cookie
// (Secure, with the __Host- prefix, when the pages are served over https).
func newCSRF(tokens *signedTokens, secure bool) fiber.Handler {
	name := "jobs_csrf"
	if secure {
		name = "__Host-jobs_csrf"
	}
	return csrf.New(csrf.Config{
		KeyLookup:      "form:" + csrfField,
		CookieName:     name,
		CookiePath:     "/",
		CookieSecure:   secure,
		CookieHTTPOnly: true,
		CookieSameSite: fiber.CookieSameSiteStrictMode,
		Expiration:     csrfLifetime,
		KeyGenerator:   tokens.generate,
		Storage:        tokens,
		ContextKey:     csrfLocal,
		ErrorHandler: func(*fiber.Ctx, error) error {
			return web.Forbidden("This form has expired or was not sent from this site. Reload the page and try again.")
		},
	})
}

// forwardedSchemeOff hides the forwarded scheme from the csrf middleware.
// Over https the middleware also demands a Referer naming this host; behind
// the gateway the Host is the backend's, and the poster's pages send no
// Referer at all (Referrer-Policy: no-referrer keeps the capability out of
// it), so every post would be refused. The token and the SameSite=Strict
// cookie are the protection; nothing after this reads the scheme.
func forwardedSchemeOff(c *fiber.Ctx) error {
	h := &c.Request().Header
	for _, k := range []string{fiber.HeaderXForwardedProto, fiber.HeaderXForwardedProtocol, fiber.HeaderXForwardedSsl, fiber.HeaderXUrlScheme} {
		h.Del(k)
	}
	return c.Next()
}

func csrfToken(c *fiber.Ctx) string {
	t, _ := c.Locals(csrfLocal).(string)
	return t
}
