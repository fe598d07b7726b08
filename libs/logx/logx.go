// Package logx builds the structured JSON logger every service uses. Lines
// logged with a request's context carry its request_id, trace_id and span_id.
package logx

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel/trace"
)

// New returns a JSON logger tagged with the service name, at level (debug,
// info, warn or error; anything else is info).
func New(service, level string) *slog.Logger {
	return NewTo(os.Stdout, service, level)
}

// NewTo is New writing to w (tests capture the output).
func NewTo(w io.Writer, service, level string) *slog.Logger {
	lv := new(slog.LevelVar)
	_ = lv.UnmarshalText([]byte(level))
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv})
	return slog.New(Handler{Handler: h, level: lv}).With("service", service)
}

// SetLevel changes the level of a logger New made, and of every logger
// derived from it: a command builds its logger before it reads LOG_LEVEL
// with the rest of its configuration (libs/service).
func SetLevel(log *slog.Logger, level string) error {
	h, ok := log.Handler().(Handler)
	if !ok || h.level == nil {
		return errors.New("not a logger of logx.New")
	}
	return h.level.UnmarshalText([]byte(level))
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying the request id (libs/web sets it).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// Handler wraps a slog.Handler and adds, from the record's context, the
// request id and the current span's trace and span ids.
type Handler struct {
	slog.Handler
	level *slog.LevelVar // the level New set, for SetLevel
}

// Handle implements slog.Handler.
func (h Handler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if id := RequestID(ctx); id != "" && !hasAttr(r, "request_id") {
			r.AddAttrs(slog.String("request_id", id))
		}
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return Handler{h.Handler.WithAttrs(attrs), h.level}
}

// WithGroup implements slog.Handler.
func (h Handler) WithGroup(name string) slog.Handler {
	return Handler{h.Handler.WithGroup(name), h.level}
}

func hasAttr(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}
