package identity

import (
	"testing"
	"time"
)

// signAt lets the external tests sign as if at another time.
func SignAt(t *testing.T, c *Codec, at time.Time) string {
	t.Helper()
	c.now = func() time.Time { return at }
	v, err := c.Sign(Identity{Kind: KindLive, KeyID: 1}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
