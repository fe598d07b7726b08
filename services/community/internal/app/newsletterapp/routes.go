// Package newsletterapp answers the newsletter routes: subscribe (double
// opt-in), confirm and unsubscribe.
package newsletterapp

import (
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/validate"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/newsletterbus"
)

// Config holds the handlers' dependencies.
type Config struct {
	Newsletter *newsletterbus.Business
}

type handlers struct{ nl *newsletterbus.Business }

// Routes registers the newsletter routes on the /v2 group.
func Routes(r fiber.Router, cfg Config) {
	h := handlers{nl: cfg.Newsletter}
	r.Post("/newsletters/subscribe", h.subscribe)
	r.Get("/newsletters/confirm", h.confirm)
	r.Post("/newsletters/confirm", h.confirm)
	r.Get("/newsletters/unsubscribe", h.unsubscribe)
	r.Post("/newsletters/unsubscribe", h.unsubscribe)
}

// Subscription is the data of every newsletter answer.
type Subscription struct {
	Status  string `json:"status"`
	Email   string `json:"email"`
	Message string `json:"message"`
}

var messages = map[string]string{
	newsletterbus.StatusPending:           "Check your inbox: we sent a link to confirm the subscription.",
	newsletterbus.StatusSubscribed:        "Your subscription is confirmed.",
	newsletterbus.StatusAlreadySubscribed: "This address is already subscribed; nothing was sent.",
	newsletterbus.StatusUnsubscribed:      "This address is unsubscribed and will receive no more newsletters.",
}

// subscribeAnswer is the one answer of the public subscribe route, whatever
// the address's state: telling "already subscribed" or "a link was sent
// recently" apart would let anyone test whether an address is on the list.
// Only the mailbox's owner learns more (the confirmation link's answers).
const subscribeAnswer = "If this address is not subscribed yet, a link to confirm the subscription is on its way; " +
	"check your inbox and spam folder. An address that is already subscribed stays subscribed."

func (h handlers) subscribe(c *fiber.Ctx) error {
	body, err := web.DecodeJSONOrForm(c)
	if err != nil {
		return err
	}
	in := newsletterbus.NewSubscription{
		Email:   body.String("email"),
		Name:    body.String("name"),
		Source:  body.String("source"),
		Consent: body.Bool("consent"),
	}
	if id := identity.From(c); id != nil {
		in.ClientIP = id.ClientIP
	}
	_, rules := newsletterbus.ValidateSubscription(in)
	if err := body.Err(rules); err != nil {
		return err
	}
	res, err := h.nl.Subscribe(c.UserContext(), in)
	var verr *validate.Error
	if errors.As(err, &verr) {
		return web.Validation("Validation failed", verr.Problems)
	}
	if err != nil {
		return err
	}
	return web.OK(c, http.StatusAccepted, Subscription{Status: newsletterbus.StatusPending, Email: res.Email, Message: subscribeAnswer})
}

// token reads the token from the query, or from a form or JSON body on POST;
// the body may also carry the fields named in accept, which have no effect.
func token(c *fiber.Ctx, accept ...string) (string, error) {
	if t := c.Query("token"); t != "" || c.Method() == fiber.MethodGet || len(c.Body()) == 0 {
		return t, nil
	}
	body, err := web.DecodeJSONOrForm(c)
	if err != nil {
		return "", err
	}
	t := body.String("token")
	body.Ignore(accept...)
	if err := body.Err(nil); err != nil {
		return "", err
	}
	return t, nil
}

func tokenError(err error) error {
	switch {
	case errors.Is(err, newsletterbus.ErrTokenExpired):
		return web.Validation("Validation failed", []string{"token has expired; subscribe again to receive a new link"})
	case errors.Is(err, newsletterbus.ErrTokenInvalid):
		return web.Validation("Validation failed", []string{"token is invalid"})
	case errors.Is(err, newsletterbus.ErrNotFound):
		return web.NotFound("No subscription matches this link; it may have expired unconfirmed. Subscribe again.")
	case errors.Is(err, newsletterbus.ErrUnsubscribed):
		return web.Conflict("This subscription was cancelled; subscribe again to receive the newsletter.")
	}
	return err
}

func (h handlers) confirm(c *fiber.Ctx) error {
	t, err := token(c)
	if err != nil {
		return err
	}
	if t == "" {
		return web.Validation("Validation failed", []string{"token is required"})
	}
	res, err := h.nl.Confirm(c.UserContext(), t)
	if err != nil {
		return tokenError(err)
	}
	return web.OK(c, http.StatusOK, Subscription{Status: res.Status, Email: res.Email, Message: messages[res.Status]})
}

func (h handlers) unsubscribe(c *fiber.Ctx) error {
	t, err := token(c, "List-Unsubscribe") // RFC 8058's one-click POST sends List-Unsubscribe=One-Click
	if err != nil {
		return err
	}
	if t == "" {
		return web.Validation("Validation failed", []string{"token is required"})
	}
	res, err := h.nl.Unsubscribe(c.UserContext(), t)
	if err != nil {
		return tokenError(err)
	}
	return web.OK(c, http.StatusOK, Subscription{Status: res.Status, Email: res.Email, Message: messages[res.Status]})
}
