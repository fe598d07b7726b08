package statsbus

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"sync"
	"time"
)

// Visitors turns (IP, user agent) into the day's visitor: the first 8 bytes
// of HMAC-SHA256 under the day's salt, which is HMAC-SHA256(secret, "stats
// visitor salt" + the UTC day). The salt lives in memory only; every replica
// derives the same one, so a visitor is one visitor whichever replica it
// reaches, and tomorrow the same client is another number. Neither the IP
// nor the user agent nor the salt is stored anywhere.
type Visitors struct {
	secret []byte

	mu   sync.Mutex
	day  time.Time
	salt []byte
}

// NewVisitors derives the daily salts from secret (at least 32 bytes).
func NewVisitors(secret []byte) (*Visitors, error) {
	if len(secret) < 32 {
		return nil, errors.New("statsbus: the visitor secret must be at least 32 bytes")
	}
	return &Visitors{secret: append([]byte(nil), secret...)}, nil
}

func (v *Visitors) saltOf(day time.Time) []byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !day.Equal(v.day) || v.salt == nil {
		m := hmac.New(sha256.New, v.secret)
		m.Write([]byte("stats visitor salt\x00"))
		m.Write([]byte(day.Format(time.DateOnly)))
		v.day, v.salt = day, m.Sum(nil)
	}
	return v.salt
}

// Of returns the visitor of (ip, userAgent) on the UTC day of at; never 0.
func (v *Visitors) Of(at time.Time, ip, userAgent string) int64 {
	m := hmac.New(sha256.New, v.saltOf(Day(at)))
	m.Write([]byte(ip))
	m.Write([]byte{0})
	m.Write([]byte(userAgent))
	n := int64(binary.BigEndian.Uint64(m.Sum(nil)[:8])) //nolint:gosec // G115: a hash's bits, any sign
	if n == 0 {
		n = 1
	}
	return n
}
