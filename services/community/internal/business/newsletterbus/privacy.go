package newsletterbus

import (
	"context"
	"time"
)

// Export is everything community holds about an address (docs/privacy.md):
// its newsletter subscription, if any, and how many feedback messages give
// it as their reply address.
type Export struct {
	Newsletter *SubscriptionExport `json:"newsletter"`
	Feedback   int                 `json:"feedback_messages"`
}

// SubscriptionExport is a subscription as an export shows it.
type SubscriptionExport struct {
	Status         string     `json:"status"`
	Name           string     `json:"name,omitempty"`
	Source         string     `json:"source,omitempty"`
	ConsentAt      time.Time  `json:"consent_at"`
	ConsentIP      string     `json:"consent_ip,omitempty"`
	ConsentVersion string     `json:"consent_version"`
	MailsSent      int        `json:"mails_sent"`
	ConfirmedAt    *time.Time `json:"confirmed_at"`
	UnsubscribedAt *time.Time `json:"unsubscribed_at"`
	CreatedAt      time.Time  `json:"created_at"`
}

// Erased reports what an erasure removed.
type Erased struct {
	Subscriber bool `json:"subscriber"`
	Feedback   int  `json:"feedback_messages"`
}

// AddressStore is the storage of an address's export and erasure.
type AddressStore interface {
	ExportAddress(ctx context.Context, email string) (*Subscriber, int, error)
	EraseAddress(ctx context.Context, email string) (Erased, error)
}

// ExportAddress lists what is held about email.
func ExportAddress(ctx context.Context, st AddressStore, email string) (Export, error) {
	s, n, err := st.ExportAddress(ctx, NormalizeEmail(email))
	if err != nil {
		return Export{}, err
	}
	out := Export{Feedback: n}
	if s != nil {
		out.Newsletter = &SubscriptionExport{Status: s.Status, Name: s.Name, Source: s.Source, ConsentAt: s.ConsentAt,
			ConsentIP: s.ConsentIP, ConsentVersion: s.ConsentVersion, MailsSent: s.MailsSent, ConfirmedAt: s.ConfirmedAt,
			UnsubscribedAt: s.UnsubscribedAt, CreatedAt: s.CreatedAt}
	}
	return out, nil
}

// EraseAddress removes everything held about email; erasing an address
// that is not held changes nothing (the route is idempotent).
func EraseAddress(ctx context.Context, st AddressStore, email string) (Erased, error) {
	return st.EraseAddress(ctx, NormalizeEmail(email))
}
