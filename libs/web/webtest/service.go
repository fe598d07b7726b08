package webtest

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

// Service is a service's app under test, built the way its process builds
// it and reached the way the gateway reaches it: each request carries an
// identity signed with the codec the service verifies, and each answer is
// held to the API document.
type Service struct {
	Server  *web.Server
	Codec   *identity.Codec
	checker Checker
}

// NewService builds the server of service name (Config, no logs) with the
// identity codec of secret: mount adds the service's routes, then the
// envelope fallback answers every other route.
func NewService(name, secret string, c Checker, mount func(srv *web.Server, codec *identity.Codec) error) (*Service, error) {
	codec, err := identity.NewCodec(secret)
	if err != nil {
		return nil, err
	}
	srv := web.New(Config(), slog.New(slog.DiscardHandler), name)
	if err := mount(srv, codec); err != nil {
		return nil, err
	}
	srv.Fallback()
	return &Service{Server: srv, Codec: codec, checker: c}, nil
}

// Request is one request to a Service.
type Request struct {
	Method, Target string
	// Body is sent with ContentType, when each is set.
	Body, ContentType string
	// Identity is signed into identity.Header for a minute; nil sends none.
	Identity *identity.Identity
	Header   map[string]string
}

// Sign returns the identity header value of id, valid for a minute.
func (s *Service) Sign(t testing.TB, id identity.Identity) string {
	t.Helper()
	v, err := s.Codec.Sign(id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Do sends r through the app and reads the answer (see Do).
func (s *Service) Do(t testing.TB, r Request) Reply {
	t.Helper()
	var body io.Reader
	if r.Body != "" {
		body = strings.NewReader(r.Body)
	}
	req := httptest.NewRequest(r.Method, r.Target, body)
	if r.ContentType != "" {
		req.Header.Set("Content-Type", r.ContentType)
	}
	if r.Identity != nil {
		req.Header.Set(identity.Header, s.Sign(t, *r.Identity))
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	return Do(t, s.Server.App, s.checker, req)
}
