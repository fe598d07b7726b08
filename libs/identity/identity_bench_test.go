package identity_test

import (
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
)

// BenchmarkSign and BenchmarkVerify live in identity_test.go.

// benchIdentity is what the gateway signs for a space key on every request.
var benchIdentity = identity.Identity{Kind: identity.KindLive, KeyID: 4711, SpaceID: 12,
	Scopes: []string{"read", "jobs:write"}, ClientIP: "203.0.113.7", RequestID: "0123456789abcdef0123456789abcdef"}

// BenchmarkVerifyParallel is the backends' view: every core verifying at once
// shares the codec's pool of HMAC states.
func BenchmarkVerifyParallel(b *testing.B) {
	codec, err := identity.NewCodec(secret)
	if err != nil {
		b.Fatal(err)
	}
	signed, err := codec.Sign(benchIdentity, 30*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := codec.Verify(signed); err != nil {
				b.Fatal(err)
			}
		}
	})
}
