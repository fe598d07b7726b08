package newsletterbus

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Token purposes: a confirmation link cannot be used to unsubscribe and back.
const (
	PurposeConfirm     = "confirm"
	PurposeUnsubscribe = "unsubscribe"
)

// Token errors.
var (
	ErrTokenInvalid = errors.New("token invalid")
	ErrTokenExpired = errors.New("token expired")
)

// Token is what a mailed link proves: that its holder received the mail sent
// to the address whose hash it carries.
type Token struct {
	Purpose      string `json:"p"`
	SubscriberID int64  `json:"s"`
	EmailHash    string `json:"e"`           // first 16 hex digits of EmailHash
	ExpiresAt    int64  `json:"x,omitempty"` // unix seconds; 0 = never
}

// Signer signs and verifies tokens with HMAC-SHA256.
type Signer struct{ key []byte }

// MinSecretLen is the shortest NEWSLETTER_TOKEN_SECRET accepted.
const MinSecretLen = 32

// NewSigner returns a signer for secret (at least MinSecretLen bytes).
func NewSigner(secret string) (*Signer, error) {
	if len(secret) < MinSecretLen {
		return nil, errors.New("newsletter token secret must be at least 32 bytes")
	}
	return &Signer{key: []byte(secret)}, nil
}

func (s *Signer) mac(payload string) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(payload))
	return h.Sum(nil)
}

// Sign returns the URL-safe text of t.
func (s *Signer) Sign(t Token) string {
	raw, _ := json.Marshal(t)
	payload := base64.RawURLEncoding.EncodeToString(raw)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload))
}

// Verify checks signature, purpose and expiry.
func (s *Signer) Verify(text, purpose string, now time.Time) (Token, error) {
	payload, sigText, ok := strings.Cut(text, ".")
	if !ok || payload == "" || sigText == "" || len(text) > 512 {
		return Token{}, ErrTokenInvalid
	}
	sig, err := base64.RawURLEncoding.DecodeString(sigText)
	if err != nil || !hmac.Equal(sig, s.mac(payload)) {
		return Token{}, ErrTokenInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Token{}, ErrTokenInvalid
	}
	var t Token
	if err := json.Unmarshal(raw, &t); err != nil || t.Purpose != purpose || t.SubscriberID <= 0 {
		return Token{}, ErrTokenInvalid
	}
	if t.ExpiresAt != 0 && now.Unix() >= t.ExpiresAt {
		return Token{}, ErrTokenExpired
	}
	return t, nil
}

// EmailHash is the hex SHA-256 of a normalised address. Workflow ids and
// tokens carry it instead of the address.
func EmailHash(email string) string {
	sum := sha256.Sum256([]byte(NormalizeEmail(email)))
	return hex.EncodeToString(sum[:])
}

func shortHash(email string) string { return EmailHash(email)[:16] }

// ConfirmToken builds the confirmation token of s, valid for ttl.
func (s *Signer) ConfirmToken(sub Subscriber, now time.Time, ttl time.Duration) string {
	return s.Sign(Token{Purpose: PurposeConfirm, SubscriberID: sub.ID, EmailHash: shortHash(sub.Email),
		ExpiresAt: now.Add(ttl).Unix()})
}

// UnsubscribeToken builds the unsubscribe token of s; it does not expire, as
// a newsletter's unsubscribe link must keep working.
func (s *Signer) UnsubscribeToken(sub Subscriber) string {
	return s.Sign(Token{Purpose: PurposeUnsubscribe, SubscriberID: sub.ID, EmailHash: shortHash(sub.Email)})
}
