package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// ServeHandler serves h with net/http on addr until ctx ends: the small
// side servers (the admin port's metrics and probes, pprof) that take no
// client traffic and need none of the API server's machinery.
func ServeHandler(ctx context.Context, name, addr string, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s %s: %w", name, addr, err)
	}
	log.Info(name+" server started", "addr", ln.Addr().String())
	go func() {
		<-ctx.Done()
		// ctx is already done here; the shutdown gets its own deadline.
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", name, err)
	}
	return nil
}

// ServePprof serves net/http/pprof on addr until ctx ends; an empty addr (the
// default of PPROF_ADDR) or "off" disables it. Profiles show memory contents
// and cost CPU, so they are never on a port a Service exposes: bind it to
// loopback (127.0.0.1:6060) and reach it with kubectl port-forward.
func ServePprof(ctx context.Context, addr string, log *slog.Logger) error {
	if addr == "" || addr == "off" {
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return ServeHandler(ctx, "pprof", addr, mux, log)
}
