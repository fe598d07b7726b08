package jobpages

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/csrf"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// csrfField is the hidden form field holding the token; csrfLocal the
// Locals key the middleware leaves the session's token under.
const (
	csrfField     = "_csrf"
	csrfLocal     = "jobpages.csrf"
	csrfLifetime  = 2 * time.Hour
	csrfKeyLabel  = "coworkjobs jobpages csrf v1"
	csrfFormLabel = "coworkjobs jobpages csrf form v1"
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
//
// The token in the cookie is the session's; a form carries it bound to the
// form and to the job (forForm), so a token taken from one job's page, or
// from one of its forms, does nothing on another job or another form.
type signedTokens struct {
	key, formKey []byte
	now          func() time.Time
}

// newSignedTokens derives the signing keys from the service's secret, so the
// identity secret itself never signs anything but identities.
func newSignedTokens(secret []byte) *signedTokens {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	return &signedTokens{key: derive(csrfKeyLabel), formKey: derive(csrfFormLabel), now: time.Now}
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

// forForm is the field of the form posting to /jobs/{form} for the job of
// hash: the session's token, then a MAC binding it to both.
func (s *signedTokens) forForm(session, form, hash string) string {
	return session + "." + base64.RawURLEncoding.EncodeToString(s.formMAC(session, form, hash))
}

func (s *signedTokens) formMAC(session, form, hash string) []byte {
	m := hmac.New(sha256.New, s.formKey)
	for _, part := range []string{form, hash, session} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

var errTokenBinding = errors.New("csrf token not bound to this form and job")

// extractor is the middleware's Extractor for form: the session's token
// from a field bound to this form and to the job the post names (its job
// field, which the handlers read too). The middleware then compares it with
// the cookie and checks its signature.
func (s *signedTokens) extractor(form string) func(*fiber.Ctx) (string, error) {
	return func(c *fiber.Ctx) (string, error) {
		field := c.FormValue(csrfField)
		i := strings.LastIndexByte(field, '.')
		if i < 0 || len(field) > 256 {
			return "", errTokenBinding
		}
		session := field[:i]
		sum, err := base64.RawURLEncoding.DecodeString(field[i+1:])
		if err != nil || !hmac.Equal(sum, s.formMAC(session, form, c.FormValue("job"))) {
			return "", errTokenBinding
		}
		return session, nil
	}
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

// newCSRF is Fiber's csrf middleware for the poster's pages: the session's
// token in an HttpOnly SameSite=Strict cookie (Secure, with the __Host-
// prefix, when the pages are served over https), and in a hidden form field
// bound to the form and the job. form is the form a POST route takes; the
// pages' GETs only mint the session's token and pass "".
func newCSRF(tokens *signedTokens, secure bool, form string) fiber.Handler {
	name := "jobs_csrf"
	if secure {
		name = "__Host-jobs_csrf"
	}
	return csrf.New(csrf.Config{
		KeyLookup:      "form:" + csrfField,
		Extractor:      tokens.extractor(form),
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
// it), so every post would be refused. The token, the SameSite=Strict
// cookie and the Origin check (sameOrigin) are the protection; nothing after
// this reads the scheme.
func forwardedSchemeOff(c *fiber.Ctx) error {
	h := &c.Request().Header
	for _, k := range []string{fiber.HeaderXForwardedProto, fiber.HeaderXForwardedProtocol, fiber.HeaderXForwardedSsl, fiber.HeaderXUrlScheme} {
		h.Del(k)
	}
	return c.Next()
}

// sameOrigin refuses a form sent from a page of another origin than the
// public base URL's. Browsers send Origin with every POST; for the pages'
// own forms it is "null", as their Referrer-Policy is no-referrer, and
// Sec-Fetch-Site, which the browser sets and no page can, tells those apart
// from a foreign one. Without Origin the sender is not a browser (or an old
// one): the token decides.
func sameOrigin(origin string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		switch o := c.Get(fiber.HeaderOrigin); {
		case o == "", strings.EqualFold(o, origin):
		case o == "null" && c.Get("Sec-Fetch-Site") == "same-origin":
		default:
			return web.Forbidden("This form was not sent from this site. Reload the page and try again.")
		}
		return c.Next()
	}
}

// originOf is the origin of base, as a browser writes it in Origin.
func originOf(base string) (string, bool) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	host := strings.ToLower(u.Host)
	if port := u.Port(); (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		host = strings.TrimSuffix(host, ":"+port)
	}
	return u.Scheme + "://" + host, true
}

// csrfSession is the session's token the middleware left for the page.
func csrfSession(c *fiber.Ctx) string {
	t, _ := c.Locals(csrfLocal).(string)
	return t
}
