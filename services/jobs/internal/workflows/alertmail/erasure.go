package alertmail

import (
	"github.com/coworkjobs/coworkjobs/libs/mailer"
)

// WithErasure adds the erasure link of m.To (libs/privacy, docs/privacy.md)
// to m: every alert mail goes through it — the confirmation, the instant
// match, and the digest (call it on the digest's message as the last step).
func (r *Relay) WithErasure(m mailer.Message) mailer.Message {
	return r.Privacy.AddLink(m, r.Jobs.BaseURL())
}
