// Package privacybus is the one erasure path of an address across the
// services (docs/privacy.md): the jobs service erases its alerts and hands
// the erasure to community (the newsletter) through an outbox, so an
// erasure it acknowledged is done there too once community answers.
package privacybus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/coworkjobs/coworkjobs/libs/outbox"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/business/alertbus"
)

// Store is the jobs side of an address.
type Store interface {
	// EraseAddress deletes the address's alerts, matches and row, and
	// queues token for community, in one transaction.
	EraseAddress(ctx context.Context, email, token string) (int, error)
	Export(ctx context.Context, email string) (bool, []alertbus.AlertExport, error)
}

// Community is community's internal privacy API (commclient).
type Community interface {
	Erase(ctx context.Context, token string) (json.RawMessage, error)
	Export(ctx context.Context, token string) (json.RawMessage, error)
}

// Business erases and exports addresses.
type Business struct {
	Store     Store
	Sealer    *privacy.Sealer
	Community Community // nil: Export and Deliver fail (the API needs neither)
}

// ErrBadToken is a forged, altered or malformed erasure token.
var ErrBadToken = privacy.ErrBadToken

// Erase erases an address here and queues its erasure in community; it
// reports how many alerts went.
func (b *Business) Erase(ctx context.Context, email string) (int, error) {
	return b.Store.EraseAddress(ctx, email, b.Sealer.Token(email))
}

// EraseToken is Erase of the address a mail's link seals.
func (b *Business) EraseToken(ctx context.Context, token string) (int, error) {
	email, err := b.Open(token)
	if err != nil {
		return 0, err
	}
	return b.Erase(ctx, email)
}

// Open returns the address a token seals, or ErrBadToken.
func (b *Business) Open(token string) (string, error) { return b.Sealer.Open(token) }

// Export is everything both services hold about an address.
type Export struct {
	Address   string          `json:"address"`
	Jobs      JobsExport      `json:"jobs"`
	Community json.RawMessage `json:"community"`
}

// JobsExport is the jobs service's part.
type JobsExport struct {
	AddressStored bool                   `json:"address_stored"`
	Alerts        []alertbus.AlertExport `json:"alerts"`
}

// Export reads both services (community must answer: an export is a read,
// asked again when it fails).
func (b *Business) Export(ctx context.Context, email string) (Export, error) {
	email = privacy.Normalize(email)
	held, alerts, err := b.Store.Export(ctx, email)
	if err != nil {
		return Export{}, err
	}
	if b.Community == nil {
		return Export{}, errors.New("export: no community client")
	}
	comm, err := b.Community.Export(ctx, b.Sealer.Token(email))
	if err != nil {
		return Export{}, fmt.Errorf("export from community: %w", err)
	}
	return Export{Address: email, Jobs: JobsExport{AddressStored: held, Alerts: alerts}, Community: comm}, nil
}

// Deliver hands one queued erasure to community (outbox.Relay's Deliver).
func (b *Business) Deliver(ctx context.Context, token string) error {
	if b.Community == nil {
		return errors.New("deliver erasure: no community client")
	}
	_, err := b.Community.Erase(ctx, token)
	return err
}

// Relay is the outbox relay of table, delivering through b.
func Relay[T any](b *Business, table outbox.Table[T], token func(T) string, r outbox.Relay[T]) *outbox.Relay[T] {
	r.Table = table
	r.Deliver = func(ctx context.Context, m outbox.Message[T]) error { return b.Deliver(ctx, token(m.Payload)) }
	return &r
}
