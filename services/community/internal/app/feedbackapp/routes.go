// Package feedbackapp answers POST /v2/feedback.
package feedbackapp

import (
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/validate"
	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/community/internal/business/feedbackbus"
)

// Config holds the handler's dependencies.
type Config struct {
	Feedback *feedbackbus.Business
}

// Routes registers the feedback route on the /v2 group.
func Routes(r fiber.Router, cfg Config) {
	r.Post("/feedback", func(c *fiber.Ctx) error { return create(c, cfg) })
}

// Created is the data of a 201.
type Created struct {
	ID        int64  `json:"id"`
	Category  string `json:"category"`
	CreatedAt string `json:"created_at"`
	Message   string `json:"message"`
}

func create(c *fiber.Ctx, cfg Config) error {
	body, err := web.DecodeJSONOrForm(c)
	if err != nil {
		return err
	}
	in := feedbackbus.NewFeedback{
		Message:   body.String("message"),
		Email:     body.String("email"),
		URL:       body.String("url"),
		Category:  body.String("category"),
		UserAgent: c.Get(fiber.HeaderUserAgent),
	}
	if id := identity.From(c); id != nil {
		in.ClientIP = id.ClientIP
	}
	if err := body.Err(feedbackbus.Validate(feedbackbus.Normalize(in))); err != nil {
		return err
	}
	saved, err := cfg.Feedback.Create(c.UserContext(), in)
	var verr *validate.Error
	if errors.As(err, &verr) {
		return web.Validation("Validation failed", verr.Problems)
	}
	if err != nil {
		return err
	}
	return web.OK(c, http.StatusCreated, Created{
		ID: saved.ID, Category: saved.Category, CreatedAt: saved.CreatedAt.UTC().Format(time.RFC3339),
		Message: "Thank you for your feedback.",
	})
}
