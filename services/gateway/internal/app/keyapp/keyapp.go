// Package keyapp is the key API, /v2/keys: a key with keys:manage creates,
// lists, rotates and revokes its space's keys (or, without a space, the keys
// it created) and reads their audit log. The gateway answers it itself,
// after the route table's key, scope and budget checks; the rules are
// keybus's, shared with the dashboard.
package keyapp

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/auth"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/business/keybus"
)

// App serves the key API over the key business.
type App struct {
	keys *keybus.Business
}

// New returns the key API.
func New(keys *keybus.Business) *App { return &App{keys: keys} }

// Handlers are the local handlers of the key routes, by "METHOD path" as
// the route table spells them.
func (a *App) Handlers() map[string]fiber.Handler {
	return map[string]fiber.Handler{
		"GET /v2/keys":                  a.list,
		"POST /v2/keys":                 a.create,
		"GET /v2/keys/events":           a.events,
		"GET /v2/keys/:id<int>":         a.get,
		"DELETE /v2/keys/:id<int>":      a.revoke,
		"POST /v2/keys/:id<int>/rotate": a.rotate,
	}
}

// actor is the calling key (the route table authenticated it).
func actor(c *fiber.Ctx) keybus.Actor {
	return keybus.KeyActor(auth.Key(c), strings.Clone(c.IP()))
}

// Key is a key as the API shows it: never the secret, never its hash.
type Key struct {
	ID                 int64      `json:"id"`
	Name               string     `json:"name"`
	Prefix             string     `json:"prefix"`
	Hint               string     `json:"hint"`
	Scopes             []string   `json:"scopes"`
	Restricted         bool       `json:"restricted"`
	SpaceID            *int64     `json:"space_id"`
	RateLimitPerMinute *int       `json:"rate_limit_per_minute"`
	Status             string     `json:"status"`
	CreatedAt          time.Time  `json:"created_at"`
	LastUsedAt         *time.Time `json:"last_used_at"`
	RevokedAt          *time.Time `json:"revoked_at"`
	ReplacedBy         *int64     `json:"replaced_by"`
	CreatedByKeyID     *int64     `json:"created_by_key_id"`
}

// CreatedKey is a new key with its full string, shown this once.
type CreatedKey struct {
	Key
	Secret string `json:"key"`
}

// Key statuses as listed.
const (
	StatusActive   = "active"
	StatusExpiring = "expiring" // rotated, working until revoked_at
	StatusRevoked  = "revoked"
)

func orNil[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// ToKey renders k as the API shows it at now.
func ToKey(k keybus.Key, now time.Time) Key {
	status := StatusActive
	switch {
	case k.RevokedBy(now):
		status = StatusRevoked
	case k.RevokedAt != nil:
		status = StatusExpiring
	}
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return Key{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Hint: k.Hint, Scopes: scopes, Restricted: !k.Live(),
		SpaceID: orNil(k.SpaceID), RateLimitPerMinute: orNil(k.RateLimitPerMinute), Status: status,
		CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt,
		ReplacedBy: orNil(k.ReplacedBy), CreatedByKeyID: orNil(k.CreatedByKeyID)}
}

// Error maps the key business's errors to the envelope.
func Error(err error) error {
	var probs keybus.Problems
	switch {
	case errors.As(err, &probs):
		return web.Validation("Validation failed", probs)
	case errors.Is(err, keybus.ErrForbidden):
		msg := strings.TrimPrefix(err.Error(), keybus.ErrForbidden.Error()+": ")
		return web.Forbidden(strings.ToUpper(msg[:1]) + msg[1:])
	case errors.Is(err, keybus.ErrNotFound):
		return web.NotFound("No key with this id among the keys this caller manages")
	case errors.Is(err, keybus.ErrTooMany):
		return web.Conflict("At most " + strconv.Itoa(keybus.MaxActiveKeys) + " keys may be active at once; revoke one first")
	case errors.Is(err, keybus.ErrLastManager):
		return web.Conflict("This is the last active key that can manage keys here: revoking it leaves no key able to create or revoke keys " +
			"(a space's owners can still do so from the dashboard; a platform asks its operator). " +
			"Create another key with keys:manage first, or repeat with ?allow_no_manager=true")
	case errors.Is(err, keybus.ErrRevoked):
		return web.Conflict("This key is revoked or already replaced; rotate its replacement instead")
	}
	return err
}

func (a *App) list(c *fiber.Ctx) error {
	keys, err := a.keys.ListFor(c.UserContext(), actor(c))
	if err != nil {
		return Error(err)
	}
	now := time.Now()
	out := make([]Key, 0, len(keys))
	for _, k := range keys {
		out = append(out, ToKey(k, now))
	}
	return web.OK(c, http.StatusOK, fiber.Map{"keys": out})
}

func (a *App) create(c *fiber.Ctx) error {
	var f web.Fields
	if err := web.DecodeJSON(c, &f); err != nil {
		return err
	}
	r := keybus.KeyRequest{Name: f.String("name"), Scopes: f.Strings("scopes"), Restricted: f.Bool("restricted")}
	r.SetRateLimit(f.OptInt("rate_limit_per_minute"))
	if err := f.Err(nil); err != nil {
		return err
	}
	k, raw, err := a.keys.CreateFor(c.UserContext(), actor(c), r)
	if err != nil {
		return Error(err)
	}
	c.Location("/v2/keys/" + strconv.FormatInt(k.ID, 10))
	return web.OK(c, http.StatusCreated, CreatedKey{Key: ToKey(k, time.Now()), Secret: raw})
}

func keyID(c *fiber.Ctx) (int64, error) {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, web.NotFound("No key with this id among the keys this caller manages")
	}
	return id, nil
}

func (a *App) get(c *fiber.Ctx) error {
	id, err := keyID(c)
	if err != nil {
		return err
	}
	k, err := a.keys.GetFor(c.UserContext(), actor(c), id)
	if err != nil {
		return Error(err)
	}
	return web.OK(c, http.StatusOK, ToKey(k, time.Now()))
}

func (a *App) revoke(c *fiber.Ctx) error {
	id, err := keyID(c)
	if err != nil {
		return err
	}
	q := web.Params(c)
	allow := false
	if v, given := q.Text("allow_no_manager", 8); given {
		switch v {
		case "true":
			allow = true
		case "false":
		default:
			q.Add("allow_no_manager must be true or false")
		}
	}
	if err := q.Err(); err != nil {
		return err
	}
	if err := a.keys.RevokeFor(c.UserContext(), actor(c), id, allow); err != nil {
		return Error(err)
	}
	return c.SendStatus(http.StatusNoContent)
}

func (a *App) rotate(c *fiber.Ctx) error {
	id, err := keyID(c)
	if err != nil {
		return err
	}
	var grace time.Duration
	if len(c.Body()) > 0 {
		var f web.Fields
		if err := web.DecodeJSON(c, &f); err != nil {
			return err
		}
		secs := f.OptInt("grace_seconds")
		if err := f.Err(nil); err != nil {
			return err
		}
		if secs != nil {
			if *secs < 0 || *secs > int64(keybus.MaxGrace.Seconds()) {
				return web.Validation("Validation failed", []string{"grace_seconds must be between 0 and " +
					strconv.Itoa(int(keybus.MaxGrace.Seconds()))})
			}
			grace = time.Duration(*secs) * time.Second
		}
	}
	k, raw, err := a.keys.RotateFor(c.UserContext(), actor(c), id, grace)
	if err != nil {
		return Error(err)
	}
	c.Location("/v2/keys/" + strconv.FormatInt(k.ID, 10))
	return web.OK(c, http.StatusCreated, CreatedKey{Key: ToKey(k, time.Now()), Secret: raw})
}

// Event is one line of the audit log as the API shows it.
type Event struct {
	ID            int64     `json:"id"`
	KeyID         int64     `json:"key_id"`
	Event         string    `json:"event"`
	Actor         Actor     `json:"actor"`
	IP            *string   `json:"ip"`
	ReplacementID *int64    `json:"replacement_id"`
	EffectiveAt   time.Time `json:"effective_at"`
	OccurredAt    time.Time `json:"occurred_at"`
}

// Actor is who did it: a key (key_id), a dashboard user (email) or an operator.
type Actor struct {
	Type  string  `json:"type"`
	KeyID *int64  `json:"key_id,omitempty"`
	Email *string `json:"email,omitempty"`
}

// ToEvent renders e.
func ToEvent(e keybus.Event) Event {
	return Event{ID: e.ID, KeyID: e.KeyID, Event: e.Event,
		Actor: Actor{Type: e.Actor, KeyID: orNil(e.ActorKeyID), Email: orNil(e.Email)},
		IP:    orNil(e.IP), ReplacementID: orNil(e.ReplacementID), EffectiveAt: e.EffectiveAt, OccurredAt: e.OccurredAt}
}

// Events page sizes.
const (
	defaultEvents = 20
	maxEvents     = 100
)

func (a *App) events(c *fiber.Ctx) error {
	q := web.Params(c)
	limit := q.Int("limit", defaultEvents, 1, maxEvents)
	var before int64
	if cur, given := q.NonEmptyText("cursor", 64); given {
		if before = decodeCursor(cur); before <= 0 {
			q.Add("cursor is not a cursor this API returned")
		}
	}
	if err := q.Err(); err != nil {
		return err
	}
	evs, err := a.keys.EventsFor(c.UserContext(), actor(c), before, limit+1)
	if err != nil {
		return Error(err)
	}
	var next *string
	if len(evs) > limit {
		evs = evs[:limit]
		cur := encodeCursor(evs[len(evs)-1].ID)
		next = &cur
	}
	out := make([]Event, 0, len(evs))
	for _, e := range evs {
		out = append(out, ToEvent(e))
	}
	return web.OK(c, http.StatusOK, fiber.Map{"events": out, "next_cursor": next})
}

// A cursor is opaque to clients: the last event id shown, encoded.
func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("ke1:" + strconv.FormatInt(id, 10)))
}

func decodeCursor(s string) int64 {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0
	}
	v, ok := strings.CutPrefix(string(b), "ke1:")
	if !ok {
		return 0
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0
	}
	return id
}
