// Package privacy is the one erasure path of an address across the services
// (docs/privacy.md): the capability every mail links to, and the footer that
// carries it.
//
// The capability is the address sealed with AES-256-GCM under a key derived
// from the services' shared secret: verifying it needs no database (a
// forged or altered token fails the GCM tag, which is the MAC), and, unlike
// an HMAC next to the address in clear, the address never shows in a URL
// that a proxy, a browser history or an access log keeps.
package privacy

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"

	"github.com/coworkjobs/coworkjobs/libs/mailer"
)

// ErasePath is the public route of the erasure page and its POST
// (the gateway sends it to the jobs service).
const ErasePath = "/v2/privacy/erase"

// MaxTokenLen is the longest token accepted: a 254-byte address sealed.
const MaxTokenLen = 512

// ErrBadToken is a token that is malformed, forged or altered.
var ErrBadToken = errors.New("privacy token invalid")

// keyLabel separates this key from every other use of the shared secret.
const keyLabel = "coworkjobs privacy erase v1"

// Sealer seals and opens erasure tokens.
type Sealer struct {
	aead     cipher.AEAD
	nonceKey []byte
}

// NewSealer derives the token key from secret (INTERNAL_IDENTITY_SECRET:
// the one secret both services already share).
func NewSealer(secret []byte) (*Sealer, error) {
	if len(secret) < 32 {
		return nil, errors.New("privacy: the secret must be at least 32 bytes")
	}
	block, err := aes.NewCipher(derive(secret, keyLabel))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead, nonceKey: derive(secret, keyLabel+" nonce")}, nil
}

func derive(secret []byte, label string) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(label))
	return h.Sum(nil)
}

// Normalize is an address as both services store it (trimmed, lower case).
func Normalize(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// Token seals the normalised address. The nonce is an HMAC of the address
// (a synthetic IV): one address has one token, so a mail sent again is the
// same mail, and two addresses never share a nonce.
func (s *Sealer) Token(email string) string {
	email = Normalize(email)
	h := hmac.New(sha256.New, s.nonceKey)
	h.Write([]byte(email))
	nonce := h.Sum(nil)[:s.aead.NonceSize()]
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(email), []byte(keyLabel)))
}

// Open returns the address a token seals, or ErrBadToken.
func (s *Sealer) Open(token string) (string, error) {
	if token == "" || len(token) > MaxTokenLen {
		return "", ErrBadToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return "", ErrBadToken
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], []byte(keyLabel))
	if err != nil || len(plain) == 0 {
		return "", ErrBadToken
	}
	return string(plain), nil
}

// Link is the erasure page of an address under the public base URL.
func (s *Sealer) Link(baseURL, email string) string {
	return strings.TrimRight(baseURL, "/") + ErasePath + "?token=" + url.QueryEscape(s.Token(email))
}

var esc = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;").Replace

// AddLink appends the erasure link of m.To to m's text and HTML parts: every
// mail to an address carries it.
func (s *Sealer) AddLink(m mailer.Message, baseURL string) mailer.Message {
	link := s.Link(baseURL, m.To)
	m.Text = strings.TrimRight(m.Text, "\n") + "\n\nErase this address everywhere on coworkjobs (job alerts and newsletter): " +
		link + "\n"
	if m.HTML != "" {
		m.HTML += `<p style="font-size:small">` + `<a href="` + esc(link) +
			`">Erase this address everywhere on coworkjobs</a> (job alerts and newsletter).</p>`
	}
	return m
}
