package identity_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/logx"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

const secret = "test-secret-0123456789abcdef0123456789"

func newBackend(t *testing.T) (*fiber.App, *identity.Codec) {
	t.Helper()
	codec, err := identity.NewCodec(secret)
	if err != nil {
		t.Fatal(err)
	}
	srv := web.New(web.Config{HTTPAddr: ":0", BodyLimitBytes: 1 << 20, ReadTimeout: time.Second, WriteTimeout: time.Second,
		IdleTimeout: time.Second, RequestTimeout: time.Second, ShutdownTimeout: time.Second, Concurrency: 16},
		logx.NewTo(io.Discard, "test", "error"), "test")
	srv.App.Get("/v2/thing", codec.Middleware(), func(c *fiber.Ctx) error {
		return web.OK(c, 200, identity.From(c))
	})
	srv.App.Get("/internal/thing", codec.Middleware(), identity.RequireKind(identity.KindService), func(c *fiber.Ctx) error {
		return web.OK(c, 200, nil)
	})
	return srv.App, codec
}

func do(t *testing.T, app *fiber.App, path, header string) (int, web.Envelope) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if header != "" {
		req.Header.Set(identity.Header, header)
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env web.Envelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return resp.StatusCode, env
}

func TestBackendIdentity(t *testing.T) {
	app, codec := newBackend(t)
	good, err := codec.Sign(identity.Identity{Kind: identity.KindLive, KeyID: 7, SpaceID: 3, Scopes: []string{"read"}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := identity.NewCodec("another-secret-0123456789abcdef012345")
	forged, _ := other.Sign(identity.Identity{Kind: identity.KindLive, KeyID: 7}, time.Minute)
	payload, sig, _ := strings.Cut(good, ".")
	tampered := strings.Replace(payload, payload[len(payload)-4:], "AAAA", 1) + "." + sig

	old, _ := identity.NewCodec(secret)
	expired := identity.SignAt(t, old, time.Now().Add(-2*time.Minute))

	cases := []struct {
		name   string
		header string
		want   int
	}{
		{"served200", good, 200},
		{"missing401", "", 401},
		{"forgedOtherSecret401", forged, 401},
		{"tamperedPayload401", tampered, 401},
		{"garbage401", "not-an-identity", 401},
		{"expired401", expired, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, env := do(t, app, "/v2/thing", tc.header)
			if status != tc.want || env.Status != tc.want {
				t.Fatalf("status %d (envelope %d), want %d", status, env.Status, tc.want)
			}
			if tc.want == 401 && (env.Error == nil || env.Error.Code != web.CodeUnauthorized || env.Success) {
				t.Fatalf("want unauthorized envelope, got %+v", env)
			}
			if tc.want == 200 {
				got := env.Data.(map[string]any)
				if got["kid"].(float64) != 7 || got["sid"].(float64) != 3 {
					t.Fatalf("identity not passed through: %v", got)
				}
			}
		})
	}
}

func TestInternalRoutesAdmitServicesOnly(t *testing.T) {
	app, codec := newBackend(t)
	svc, _ := codec.Sign(identity.Identity{Kind: identity.KindService, Service: "jobs"}, time.Minute)
	key, _ := codec.Sign(identity.Identity{Kind: identity.KindLive, KeyID: 1}, time.Minute)
	if status, _ := do(t, app, "/internal/thing", svc); status != 200 {
		t.Fatalf("service identity: status %d, want 200", status)
	}
	if status, env := do(t, app, "/internal/thing", key); status != 403 || env.Error.Code != web.CodeForbidden {
		t.Fatalf("key identity on internal route: status %d, want 403", status)
	}
}

func TestSignRejectsUnknownKindOnVerify(t *testing.T) {
	codec, _ := identity.NewCodec(secret)
	v, _ := codec.Sign(identity.Identity{Kind: "admin"}, time.Minute)
	if _, err := codec.Verify(v); err == nil {
		t.Fatal("an identity of unknown kind was accepted")
	}
}

func TestNewCodecRejectsShortSecret(t *testing.T) {
	if _, err := identity.NewCodec("short"); err == nil {
		t.Fatal("short secret accepted")
	}
}

func BenchmarkVerify(b *testing.B) {
	codec, _ := identity.NewCodec(secret)
	v, _ := codec.Sign(identity.Identity{Kind: identity.KindLive, KeyID: 7, SpaceID: 3, Scopes: []string{"read", "jobs:write"}}, time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codec.Verify(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSign(b *testing.B) {
	codec, _ := identity.NewCodec(secret)
	id := identity.Identity{Kind: identity.KindLive, KeyID: 7, SpaceID: 3, Scopes: []string{"read", "jobs:write"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := codec.Sign(id, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}
