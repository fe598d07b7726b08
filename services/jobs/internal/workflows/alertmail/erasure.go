package alertmail

import (
	"github.com/coworkjobs/coworkjobs/libs/mailer"
)

// WithErasure adds the erasure link of m.To (libs/privacy, docs/privacy.md)
// to m: every alert mail goes through it (ConfirmMail, MatchMail, DigestMail).
func (r *Relay) WithErasure(m mailer.Message) mailer.Message {
	return r.Privacy.AddLink(m, r.Jobs.BaseURL())
}
