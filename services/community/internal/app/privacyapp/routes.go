// Package privacyapp answers community's internal privacy routes
// (docs/internal-api.md): the jobs service, which serves the public erasure
// page, hands an address's erasure and export here. The address travels
// sealed (libs/privacy), so no request line or body log shows it.
package privacyapp

import (
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/privacy"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
)

// Config wires the handlers.
type Config struct {
	Codec  *identity.Codec
	Sealer *privacy.Sealer
	Store  newsletterbus.AddressStore
}

type handlers struct {
	sealer *privacy.Sealer
	store  newsletterbus.AddressStore
}

// Routes mounts POST /internal/privacy/erase and /internal/privacy/export,
// for service identities only.
func Routes(app *fiber.App, cfg Config) {
	h := handlers{sealer: cfg.Sealer, store: cfg.Store}
	in := app.Group("/internal/privacy", cfg.Codec.Middleware(), identity.RequireKind(identity.KindService))
	in.Post("/erase", h.erase)
	in.Post("/export", h.export)
}

// address opens the body's {"token"}.
func (h handlers) address(c *fiber.Ctx) (string, error) {
	body, err := web.DecodeJSONOrForm(c)
	if err != nil {
		return "", err
	}
	tok := body.String("token")
	var p []string
	if tok == "" {
		p = append(p, "token is required")
	}
	if err := body.Err(p); err != nil {
		return "", err
	}
	email, err := h.sealer.Open(tok)
	if errors.Is(err, privacy.ErrBadToken) {
		return "", web.Validation("Validation failed", []string{"token is invalid"})
	}
	return email, err
}

// erase is idempotent: an address held nowhere answers 200 with nothing erased.
func (h handlers) erase(c *fiber.Ctx) error {
	email, err := h.address(c)
	if err != nil {
		return err
	}
	out, err := newsletterbus.EraseAddress(c.UserContext(), h.store, email)
	if err != nil {
		return err
	}
	return web.OK(c, http.StatusOK, out)
}

func (h handlers) export(c *fiber.Ctx) error {
	email, err := h.address(c)
	if err != nil {
		return err
	}
	out, err := newsletterbus.ExportAddress(c.UserContext(), h.store, email)
	if err != nil {
		return err
	}
	return web.OK(c, http.StatusOK, out)
}
