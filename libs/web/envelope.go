// Package web is the HTTP foundation every coworkjobs service shares: the JSON
// envelope and its error codes, the one error handler, and the server bootstrap.
package web

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gofiber/fiber/v2"
)

// Error codes of the spec's Errors table, plus the few the spec leaves to us
// (payload_too_large, unsupported_media_type, service_unavailable, timeout), which the OpenAPI document lists.
const (
	CodeBadRequest         = "bad_request"
	CodeUnauthorized       = "unauthorized"
	CodeForbidden          = "forbidden"
	CodeNotFound           = "not_found"
	CodeMethodNotAllowed   = "method_not_allowed"
	CodeConflict           = "conflict"
	CodePayloadTooLarge    = "payload_too_large"
	CodeUnsupportedMedia   = "unsupported_media_type"
	CodeValidation         = "validation_error"
	CodeRateLimitExceeded  = "rate_limit_exceeded"
	CodeServerError        = "server_error"
	CodeServiceUnavailable = "service_unavailable"
	CodeTimeout            = "timeout"
	// CodeGone: what was asked for is no longer kept (a changes-feed cursor past its retention).
	CodeGone = "gone"
)

// Envelope is the body of every response: data on success, error otherwise.
type Envelope struct {
	Success bool       `json:"success"`
	Status  int        `json:"status"`
	Data    any        `json:"data,omitempty"`
	Error   *ErrorBody `json:"error,omitempty"`
}

// ErrorBody is the error member of the envelope.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}

// Error is an error that knows how it is answered. Handlers return it; the
// central error handler writes it. Anything else becomes a 500 server_error.
type Error struct {
	Status  int
	Code    string
	Message string
	Details any
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// NewError builds an Error with the code that belongs to status.
func NewError(status int, message string) *Error {
	return &Error{Status: status, Code: CodeForStatus(status), Message: message}
}

// Validation is the 422 answer; details lists every problem at once.
func Validation(message string, problems []string) *Error {
	if problems == nil {
		problems = []string{}
	}
	return &Error{Status: http.StatusUnprocessableEntity, Code: CodeValidation, Message: message, Details: problems}
}

// Convenience constructors for the codes handlers use most.
func BadRequest(msg string) *Error { return NewError(http.StatusBadRequest, msg) }
func NotFound(msg string) *Error   { return NewError(http.StatusNotFound, msg) }
func Forbidden(msg string) *Error  { return NewError(http.StatusForbidden, msg) }
func Conflict(msg string) *Error   { return NewError(http.StatusConflict, msg) }
func Unauthorized(msg string) *Error {
	return NewError(http.StatusUnauthorized, msg)
}

// CodeForStatus maps an HTTP status to the envelope code clients switch on.
func CodeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusConflict:
		return CodeConflict
	case http.StatusGone:
		return CodeGone
	case http.StatusRequestEntityTooLarge:
		return CodePayloadTooLarge
	case http.StatusUnsupportedMediaType:
		return CodeUnsupportedMedia
	case http.StatusUnprocessableEntity:
		return CodeValidation
	case http.StatusTooManyRequests:
		return CodeRateLimitExceeded
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return CodeServiceUnavailable
	case http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return CodeTimeout
	}
	if status >= 500 {
		return CodeServerError
	}
	return CodeBadRequest
}

// OK writes a success envelope.
func OK(c *fiber.Ctx, status int, data any) error {
	return c.Status(status).JSON(Envelope{Success: true, Status: status, Data: data})
}

// WriteError writes an error envelope directly (for middleware that answers
// without going through the error handler).
func WriteError(c *fiber.Ctx, e *Error) error {
	return c.Status(e.Status).JSON(Envelope{
		Status: e.Status,
		Error:  &ErrorBody{Code: e.Code, Message: e.Message, Details: e.Details},
	})
}

// AsError reports whether err carries an *Error.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
