package statsbus

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"

	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/jobbus"
)

// Refs names jobs in /go/{job_ref} links: "{id}-{mac}", the mac 12 hex
// digits of HMAC-SHA256 under a key derived from the service's secret. A
// ref names one job only; a tampered ref names none (404), so a /go/ link
// can lead nowhere but to its job's own URLs.
type Refs struct{ key []byte }

// NewRefs derives the refs' key from secret (at least 32 bytes).
func NewRefs(secret []byte) (*Refs, error) {
	if len(secret) < 32 {
		return nil, errors.New("statsbus: the ref secret must be at least 32 bytes")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("statsbus go ref key"))
	return &Refs{key: m.Sum(nil)}, nil
}

func (r *Refs) mac(id int64) string {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(strconv.FormatInt(id, 10)))
	return hex.EncodeToString(m.Sum(nil)[:6])
}

// Of is job id's ref.
func (r *Refs) Of(id int64) string { return strconv.FormatInt(id, 10) + "-" + r.mac(id) }

// Parse returns the job a ref names; false for anything not made by Of.
func (r *Refs) Parse(ref string) (int64, bool) {
	num, mac, ok := strings.Cut(ref, "-")
	if !ok || len(num) == 0 || len(num) > 18 || strings.TrimLeft(num, "0123456789") != "" || num[0] == '0' {
		return 0, false
	}
	id, err := strconv.ParseInt(num, 10, 64)
	if err != nil || id <= 0 {
		return 0, false
	}
	return id, hmac.Equal([]byte(mac), []byte(r.mac(id)))
}

// Target is where a job's apply click leads: its apply_url, else its
// external_url (which carries the referral parameter), else its public
// page. Only the job's own URLs: nothing of the request decides it.
func Target(d jobbus.Detail, pageURL string) string {
	switch {
	case d.ApplyURL != nil && *d.ApplyURL != "":
		return *d.ApplyURL
	case d.ExternalURL != "":
		return d.ExternalURL
	}
	return pageURL
}
