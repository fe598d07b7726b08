package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/web/conncap"
)

// messages for the errors Fiber and fasthttp raise themselves, so that clients
// never see framework wording such as "Cannot GET /x".
var frameworkMessages = map[int]string{
	http.StatusBadRequest:                  "Malformed request",
	http.StatusNotFound:                    "Route not found",
	http.StatusMethodNotAllowed:            "Method not allowed on this route",
	http.StatusRequestTimeout:              "Request timed out",
	http.StatusRequestEntityTooLarge:       "Request body too large",
	http.StatusRequestHeaderFieldsTooLarge: "Request headers too large",
	http.StatusUnsupportedMediaType:        "Unsupported media type",
	http.StatusBadGateway:                  "Upstream service unavailable",
	http.StatusServiceUnavailable:          "Service unavailable",
	http.StatusGatewayTimeout:              "Upstream service timed out",
}

// ErrorHandler is the one place where an error becomes a response. Coded
// errors (*Error) are written as they are; Fiber's own errors get the matching
// code; a context deadline is a 504 timeout; anything else is logged once and
// answered as a 500 server_error without leaking its text.
func ErrorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		var fe *fiber.Error
		if errors.As(err, &fe) && fe.Code == http.StatusRequestEntityTooLarge {
			// The body was refused unread (its Content-Length is over the
			// limit) and the connection closes after this answer.
			conncap.Linger(c.Context().Conn())
		}
		e := Classify(err)
		if e.Status >= 500 {
			log.ErrorContext(c.UserContext(), "request failed",
				"status", e.Status, "method", c.Method(), "route", RouteTemplate(c),
				"request_id", RequestID(c), "error", err.Error())
		}
		return WriteError(c, e)
	}
}

// Status is the status a request is answered with once the handlers after
// a middleware returned err: the error's, else the response's.
func Status(c *fiber.Ctx, err error) int {
	if err != nil {
		return Classify(err).Status
	}
	return c.Response().StatusCode()
}

// Classify turns any error into the *Error it is answered with.
func Classify(err error) *Error {
	if e, ok := AsError(err); ok {
		return e
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		msg, ok := frameworkMessages[fe.Code]
		if !ok {
			msg = http.StatusText(fe.Code)
		}
		if fe.Code >= 500 && fe.Code != http.StatusBadGateway && fe.Code != http.StatusServiceUnavailable && fe.Code != http.StatusGatewayTimeout {
			msg = "Internal server error"
		}
		return &Error{Status: fe.Code, Code: CodeForStatus(fe.Code), Message: msg}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Status: http.StatusGatewayTimeout, Code: CodeTimeout, Message: "The request took too long and was cancelled"}
	}
	if Unavailable(err) {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeServiceUnavailable,
			Message: "A dependency of this service is unavailable; retry shortly"}
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeServerError, Message: "Internal server error"}
}

// Unavailable reports whether err means a dependency (the database above
// all) could not be reached or went away — which a retry may cure, so the
// client gets 503 service_unavailable rather than a 500: a refused, reset or
// cut connection, a driver error marked safe to retry, or a PostgreSQL
// connection exception (SQLSTATE class 08), shutdown/startup state
// (57P01-57P05) or too many connections (53300: seen when a rollout briefly
// doubles the pools). It looks for the methods of pgconn's errors (SQLState,
// SafeToRetry), so this package needs no driver.
func Unavailable(err error) bool {
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		c := st.SQLState()
		return strings.HasPrefix(c, "08") || strings.HasPrefix(c, "57P") || c == "53300"
	}
	// pgconn marks errors raised before anything reached the server (a
	// connection closed under the pool, say) as safe to retry.
	var retry interface{ SafeToRetry() bool }
	if errors.As(err, &retry) && retry.SafeToRetry() {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// RouteTemplate is the matched route pattern (never the raw path, which would
// carry ids), for logs and metric labels.
func RouteTemplate(c *fiber.Ctx) string {
	if r := c.Route(); r != nil && r.Path != "" && r.Path != "/" {
		return r.Path
	}
	return "unmatched"
}
