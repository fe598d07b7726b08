package identity_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
)

// Sign writes the gateway's identities by hand; the bytes must be exactly
// what encoding/json writes, and anything with a string that needs escaping
// must go through encoding/json. Either way the backend reads back what was
// signed.
func TestSignEncodesAsEncodingJSON(t *testing.T) {
	exp := time.Now().Add(30 * time.Second).UnixMilli()
	cases := []struct {
		name string
		id   identity.Identity
		fast bool
	}{
		{"gateway, space key", identity.Identity{Kind: identity.KindLive, KeyID: 4711, SpaceID: 12, Scopes: []string{"read", "jobs:write"},
			ClientIP: "203.0.113.7", RequestID: "0123456789abcdef0123456789abcdef"}, true},
		{"public, IPv6", identity.Identity{Kind: identity.KindPublic, ClientIP: "2001:db8::1", RequestID: "req-1"}, true},
		{"zero values omitted", identity.Identity{Kind: identity.KindRestricted}, true},
		{"empty scope list omitted", identity.Identity{Kind: identity.KindLive, KeyID: -3, Scopes: []string{}}, true},
		{"importer and service", identity.Identity{Kind: identity.KindService, Service: "jobs", TrustedImporter: true, SpaceID: -1}, true},
		{"empty scope name", identity.Identity{Kind: identity.KindLive, Scopes: []string{""}}, true},
		{"quote in request id", identity.Identity{Kind: identity.KindLive, RequestID: `a","knd":"service`}, false},
		{"backslash", identity.Identity{Kind: identity.KindPublic, ClientIP: `\u0022`}, false},
		{"less than", identity.Identity{Kind: identity.KindPublic, RequestID: "a<b"}, false},
		{"greater than", identity.Identity{Kind: identity.KindPublic, Scopes: []string{"a>b"}}, false},
		{"ampersand", identity.Identity{Kind: identity.KindPublic, ClientIP: "a&b"}, false},
		{"DEL", identity.Identity{Kind: identity.KindPublic, RequestID: "a\x7fb"}, false},
		{"control character", identity.Identity{Kind: identity.KindPublic, RequestID: "a\nb"}, false},
		{"unit separator", identity.Identity{Kind: identity.KindPublic, RequestID: "a\x1fb"}, false},
		{"non-ASCII scope", identity.Identity{Kind: identity.KindLive, Scopes: []string{"lecture", "écriture"}}, false},
		{"invalid UTF-8", identity.Identity{Kind: identity.KindPublic, Service: "\xff"}, false},
	}
	codec, err := identity.NewCodec(secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.id
			id.ExpiresAt = exp
			got, ok := identity.PayloadJSON(id)
			if ok != tc.fast {
				t.Fatalf("hand-written encoding used: %v, want %v", ok, tc.fast)
			}
			if ok {
				want, err := json.Marshal(id)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("encoded\n%s\nencoding/json:\n%s", got, want)
				}
			}
			signed, err := codec.Sign(tc.id, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			back, err := codec.Verify(signed)
			if err != nil {
				t.Fatal(err)
			}
			back.ExpiresAt = 0
			want := tc.id
			if len(want.Scopes) == 0 {
				want.Scopes = nil // omitted on the wire
			}
			if tc.name == "invalid UTF-8" {
				want.Service = "\ufffd" // encoding/json's replacement, as before
			}
			if !reflect.DeepEqual(*back, want) {
				t.Fatalf("verified %+v, signed %+v", *back, want)
			}
		})
	}
}
