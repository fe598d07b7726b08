package stdwebhook

import (
	"strings"
	"testing"
	"time"
)

// The vector the Standard Webhooks specification and its libraries' tests
// publish.
const (
	vecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" //nolint:gosec // G101: the specification's published test vector
	vecID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecTS     = 1614265330
	vecBody   = `{"test": 2432232314}`
	vecSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignMatchesThePublishedVector(t *testing.T) {
	sig, err := Sign(vecSecret, vecID, time.Unix(vecTS, 0), []byte(vecBody))
	if err != nil || sig != vecSig {
		t.Fatalf("Sign = %q %v, want %q", sig, err, vecSig)
	}
	if err := Verify(vecSecret, vecID, "1614265330", "v1,bm9wZQ== "+vecSig, []byte(vecBody), time.Unix(vecTS+10, 0)); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	now := time.Unix(vecTS, 0)
	for name, tc := range map[string]struct{ secret, ts, sigs, body string }{
		"otherBody":   {vecSecret, "1614265330", vecSig, `{"test": 2432232315}`},
		"otherSecret": {"whsec_" + strings.Repeat("A", 32), "1614265330", vecSig, vecBody},
		"oldStamp":    {vecSecret, "1614264000", vecSig, vecBody},
		"badStamp":    {vecSecret, "soon", vecSig, vecBody},
		"noSig":       {vecSecret, "1614265330", "", vecBody},
		"v2Only":      {vecSecret, "1614265330", "v2," + vecSig[3:], vecBody},
	} {
		if err := Verify(tc.secret, vecID, tc.ts, tc.sigs, []byte(tc.body), now); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
	if _, err := Sign("whsec_not base64!", vecID, now, nil); err == nil {
		t.Error("a secret that is not base64 signed")
	}
}

// During a rotation both secrets sign: a receiver with either verifies.
func TestHeadersSignWithEverySecret(t *testing.T) {
	now := time.Now()
	old, fresh := vecSecret, "whsec_"+"c2Vjb25kIHNlY3JldCBvZiB0aGUgdGVzdA=="
	h, err := Headers("msg_1", now, []byte("{}"), fresh, old)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(h[HeaderSignature])); n != 2 {
		t.Fatalf("%d signatures", n)
	}
	for _, s := range []string{old, fresh} {
		if err := Verify(s, h[HeaderID], h[HeaderTimestamp], h[HeaderSignature], []byte("{}"), now); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
