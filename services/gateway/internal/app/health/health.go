// Package health answers GET /v2/health from what a background poll of
// Redis and each backend's /readyz last saw, and exports it as the
// gateway_dependency_up gauge.
package health

import (
	"context"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/coworkjobs/coworkjobs/libs/web"
	"github.com/coworkjobs/coworkjobs/services/gateway/internal/ratelimit"
)

// Backend is what the health check needs of a backend.
type Backend interface {
	// Ready reports whether the backend's /readyz answers 200 within timeout.
	Ready(timeout time.Duration) bool
}

// Config is what the health check looks at.
type Config struct {
	Redis    redis.UniversalClient // nil when not configured
	Backends map[string]Backend
	Limiter  *ratelimit.Limiter // which store the rate limits use
}

// Checker polls Redis and each backend's /readyz in the background, so
// that GET /v2/health costs no fan-out per call and cannot be used to amplify
// load onto the backends.
type Checker struct {
	cfg   Config
	every time.Duration

	// up is what the last poll saw, per dependency: alerts need "Redis is
	// unreachable" as a state, not inferred from rate-limit traffic.
	up *prometheus.GaugeVec

	mu       sync.RWMutex
	snapshot healthSnapshot
	checked  time.Time
}

type healthSnapshot struct {
	redisUp      bool
	redisVersion string
	services     map[string]string
}

// New returns the checker of cfg; reg receives its gauge (nil: none). Run
// polls.
func New(cfg Config, reg *prometheus.Registry) *Checker {
	h := &Checker{cfg: cfg, every: 2 * time.Second, up: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gateway_dependency_up",
		Help: "1 when the gateway's last check (every 2s) reached the dependency (redis, or a backend's /readyz), else 0.",
	}, []string{"dependency"})}
	if reg != nil {
		reg.MustRegister(h.up)
	}
	return h
}

// Run polls until ctx ends.
func (h *Checker) Run(ctx context.Context) {
	t := time.NewTicker(h.every)
	defer t.Stop()
	for {
		h.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *Checker) refresh(ctx context.Context) healthSnapshot {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s := healthSnapshot{services: map[string]string{}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for name, b := range h.cfg.Backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status := "down"
			if b.Ready(800 * time.Millisecond) {
				status = "up"
			}
			mu.Lock()
			s.services[name] = status
			mu.Unlock()
		}()
	}
	if h.cfg.Redis != nil {
		if info, err := h.cfg.Redis.Info(ctx, "server").Result(); err == nil {
			s.redisUp = true
			s.redisVersion = infoField(info, "redis_version")
		}
	}
	wg.Wait()
	if h.cfg.Redis != nil {
		h.up.WithLabelValues("redis").Set(bool01(s.redisUp))
	}
	for name, status := range s.services {
		h.up.WithLabelValues(name).Set(bool01(status == "up"))
	}
	h.mu.Lock()
	h.snapshot, h.checked = s, time.Now()
	h.mu.Unlock()
	return s
}

func (h *Checker) current(ctx context.Context) healthSnapshot {
	h.mu.RLock()
	s, fresh := h.snapshot, time.Since(h.checked) < 2*h.every
	h.mu.RUnlock()
	if !fresh {
		return h.refresh(ctx)
	}
	return s
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// Handler answers GET /v2/health.
func (h *Checker) Handler(c *fiber.Ctx) error {
	s := h.current(c.UserContext())
	// Redis is asked live: "connected" must mean it answers now, not a while ago.
	s.redisUp = h.cfg.Redis != nil && h.cfg.Redis.Ping(c.UserContext()).Err() == nil
	if !s.redisUp {
		s.redisVersion = ""
	}
	status := "ok"
	redisStatus := "connected"
	if !s.redisUp {
		redisStatus, status = "disconnected", "degraded"
	}
	services := fiber.Map{}
	for name, st := range s.services {
		services[name] = fiber.Map{"status": st}
		if st != "up" {
			status = "degraded"
		}
	}
	limiter := "redis"
	if !h.cfg.Limiter.RedisAvailable() || !s.redisUp {
		limiter = "local"
	}
	sample := make([]metrics.Sample, 1)
	copy(sample, heapSample)
	metrics.Read(sample)
	var heap int64
	if sample[0].Value.Kind() == metrics.KindUint64 {
		heap = int64(sample[0].Value.Uint64())
	}
	return web.OK(c, http.StatusOK, fiber.Map{
		"status":       status,
		"php_version":  runtime.Version(),
		"memory_usage": heap,
		"redis":        fiber.Map{"status": redisStatus, "version": s.redisVersion},
		"rate_limiter": limiter,
		"services":     services,
	})
}
