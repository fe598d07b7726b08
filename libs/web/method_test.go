package web_test

import (
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// A method Fiber does not know still gets the envelope (Fiber alone answers
// a plain-text 400), with Allow where the path exists.
func TestUnknownMethodIsEnvelope405(t *testing.T) {
	base, _, _ := start(t, newServer(t))
	for _, tc := range []struct{ method, path, allow string }{
		{"FOO", "/echo", "POST"},
		{"PROPFIND", "/nowhere", ""},
	} {
		r := call(t, tc.method, base+tc.path, nil, nil)
		if r.status != 405 || r.env.Status != 405 || r.env.Success || r.env.Error == nil || r.env.Error.Code != web.CodeMethodNotAllowed {
			t.Fatalf("%s %s: %d %s", tc.method, tc.path, r.status, r.raw)
		}
		if got := r.header.Get("Allow"); got != tc.allow {
			t.Fatalf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
		}
	}
	// Known methods are untouched.
	if r := call(t, "POST", base+"/echo", nil, map[string]string{"Content-Type": "application/json"}); r.status == 405 {
		t.Fatalf("POST /echo: %d %s", r.status, r.raw)
	}
}
