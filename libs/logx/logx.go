// Package logx builds the structured JSON logger every service uses.
package logx

import (
	"io"
	"log/slog"
	"os"
)

// New returns a JSON logger tagged with the service name.
func New(service, level string) *slog.Logger {
	return NewTo(os.Stdout, service, level)
}

// NewTo is New writing to w (tests capture the output).
func NewTo(w io.Writer, service, level string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv})
	return slog.New(h).With("service", service)
}
