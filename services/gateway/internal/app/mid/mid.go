// Package mid is the gateway's edge middleware: CORS for the API (kept over
// a forwarded answer), the security headers of every answer, the access log,
// and the HTML error pages of the page routes.
package mid

import (
	"html"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/app/auth"
)

// CORS lets the origins allowOrigins (a comma-separated list, or "*") read
// the API's answers.
func CORS(allowOrigins string) fiber.Handler {
	return cors.New(cors.Config{
		// The API's alone: no other site may read the HTML pages (the
		// poster's carry the edit hash and their forms' tokens).
		Next:          func(c *fiber.Ctx) bool { return c.Path() != "/v2" && !strings.HasPrefix(c.Path(), "/v2/") },
		AllowOrigins:  allowOrigins,
		AllowMethods:  "GET,POST,PATCH,DELETE,HEAD,OPTIONS",
		AllowHeaders:  "X-API-Key, Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-ID",
		ExposeHeaders: "X-Request-ID, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, RateLimit, RateLimit-Policy, Retry-After, Idempotent-Replayed, ETag",
		MaxAge:        600,
	})
}

// KeepCORSHeaders puts back the CORS headers the cors middleware set before
// the handler: a forwarded response replaces every header set before it, and
// without them a browser may not read any backend's answer cross-origin.
func KeepCORSHeaders(c *fiber.Ctx) error {
	type header struct{ k, v string }
	var kept []header
	c.Response().Header.VisitAll(func(k, v []byte) {
		if name := string(k); strings.HasPrefix(name, "Access-Control-") || name == fiber.HeaderVary {
			kept = append(kept, header{name, string(v)})
		}
	})
	err := c.Next()
	h := &c.Response().Header
	for _, kv := range kept {
		switch cur := string(h.Peek(kv.k)); {
		case cur == "":
			h.Set(kv.k, kv.v)
		case kv.k == fiber.HeaderVary && !strings.Contains(strings.ToLower(cur), strings.ToLower(kv.v)):
			h.Set(kv.k, cur+", "+kv.v) // the backend's Vary and the origin's both hold
		}
	}
	return err
}

// SecurityHeaders are set deliberately on every answer: the API serves JSON
// only, so nothing may be sniffed, framed or leak a referrer.
func SecurityHeaders(c *fiber.Ctx) error {
	err := c.Next()
	// Set after the handler: a forwarded response replaces the headers that
	// were set before it.
	h := &c.Response().Header
	h.SetCanonical(headerNosniff[0], headerNosniff[1])
	h.SetCanonical(headerDeny[0], headerDeny[1])
	h.SetCanonical(headerNoReferrer[0], headerNoReferrer[1])
	if len(h.Peek(fiber.HeaderCacheControl)) == 0 {
		h.SetCanonical(headerNoStore[0], headerNoStore[1])
	}
	if strings.HasPrefix(c.Path(), "/embed/") {
		// Other sites load the embed: set here, so that an answer from
		// the response cache (type and body only) carries them too.
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		h.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	}
	return err
}

// The security headers as canonical bytes: SetCanonical skips normalising
// the name and converting both on every answer.
var (
	headerNosniff    = [2][]byte{[]byte(fiber.HeaderXContentTypeOptions), []byte("nosniff")}
	headerDeny       = [2][]byte{[]byte(fiber.HeaderXFrameOptions), []byte("DENY")}
	headerNoReferrer = [2][]byte{[]byte(fiber.HeaderReferrerPolicy), []byte("no-referrer")}
	headerNoStore    = [2][]byte{[]byte(fiber.HeaderCacheControl), []byte("no-store")}
)

// AccessLog writes one line per request: route template (never the raw path
// or query, which may carry an api_key), status, duration, key id.
func AccessLog(log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		err := c.Next()
		status := web.Status(c, err)
		log.LogAttrs(c.UserContext(), slog.LevelInfo, "request",
			slog.String("method", c.Method()), slog.String("route", web.RouteTemplate(c)),
			slog.Int("status", status), slog.Int64("duration_us", time.Since(start).Microseconds()),
			slog.String("request_id", web.RequestID(c)), slog.Int64("key_id", auth.KeyID(c)))
		return err
	}
}

// HTMLErrors answers an error of next, a page route's handler, as a small
// HTML page of the same status (a browser shows it; the envelope is for API
// clients), logged as the error handler would.
func HTMLErrors(log *slog.Logger, next fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		err := next(c)
		if err == nil {
			return nil
		}
		e := web.Classify(err)
		if e.Status >= 500 {
			log.ErrorContext(c.UserContext(), "request failed", "status", e.Status, "method", c.Method(),
				"route", web.RouteTemplate(c), "request_id", web.RequestID(c), "error", err.Error())
		}
		msg := e.Message
		if e.Status == http.StatusTooManyRequests {
			msg = "Too many requests from your address; wait a minute and try again."
		}
		title := html.EscapeString(http.StatusText(e.Status))
		c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
		return c.Status(e.Status).SendString("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + title +
			"</title></head><body><h1>" + title + "</h1><p>" + html.EscapeString(msg) + "</p></body></html>\n")
	}
}
