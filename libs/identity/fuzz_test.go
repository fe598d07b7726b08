package identity_test

import (
	"strings"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/identity"
)

// FuzzVerify: a backend trusts only what the gateway signed. No header value
// the fuzzer makes verifies (it would have to forge HMAC-SHA256), a signed
// identity verifies to exactly what was signed, and changing any byte of a
// signed value makes it fail.
func FuzzVerify(f *testing.F) {
	codec, err := identity.NewCodec(strings.Repeat("s", 32))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("", int64(1), int64(0), uint(0))
	f.Add("eyJrbmQiOiJsaXZlIiwia2lkIjo3LCJzaWQiOjMsImV4cCI6MTc5NTQzNDI4Mjc2OH0.iGnM9e59jv62VaaSAT04SkqEcpJkCe8pYwPzj32jn-8", int64(7), int64(3), uint(5))
	f.Add("eyJrbmQiOiJzZXJ2aWNlIn0.", int64(0), int64(-1), uint(1))
	f.Add(".....", int64(1), int64(2), uint(1000))
	f.Fuzz(func(t *testing.T, value string, keyID, spaceID int64, flip uint) {
		if id, err := codec.Verify(value); err == nil {
			t.Fatalf("unsigned value %q verified as %+v", value, id)
		}
		ip := strings.ToValidUTF8(value, "?") // JSON carries text; a client address is ASCII anyway
		want := identity.Identity{Kind: identity.KindRestricted, KeyID: keyID, SpaceID: spaceID, ClientIP: ip,
			Scopes: []string{"read", ip}, RequestID: ip}
		signed, err := codec.Sign(want, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := codec.Verify(signed)
		if err != nil || got.Kind != want.Kind || got.KeyID != keyID || got.SpaceID != spaceID || got.ClientIP != ip ||
			got.RequestID != ip || len(got.Scopes) != 2 || got.Scopes[1] != ip {
			t.Fatalf("round trip of %+v: %+v %v", want, got, err)
		}
		b := []byte(signed)
		i := int(flip % uint(len(b)))
		b[i] ^= 1 + byte(flip>>8)%255
		if id, err := codec.Verify(string(b)); err == nil {
			// Base64 has padding bits: flipping one of the unused low bits of the
			// last character can decode to the same bytes. Then the identity must
			// still be exactly the signed one.
			if id.KeyID != keyID || id.SpaceID != spaceID || id.ClientIP != ip || id.Kind != want.Kind {
				t.Fatalf("altered value %q verified as %+v", b, id)
			}
		}
	})
}
