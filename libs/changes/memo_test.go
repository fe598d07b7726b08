package changes_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/changes"
	"github.com/coworkjobs/coworkjobs/libs/redisx/redistest"
)

func TestMemo(t *testing.T) {
	t.Run("single", func(t *testing.T) { testMemo(t, open(t, redisURL())) })
	// The memo and the versions in one MGET: one slot on a cluster.
	t.Run("cluster", func(t *testing.T) { testMemo(t, open(t, redistest.Cluster(t, 3))) })
}

func testMemo(t *testing.T, v *changes.Versions) {
	ctx := context.Background()
	a, b := scope("a"), scope("b")
	name := scope("memo")
	if _, err := v.ReadMemo(ctx, name, a); !errors.Is(err, changes.ErrMissing) {
		t.Fatalf("a memo without versions: %v, want ErrMissing (nothing may be kept)", err)
	}
	if err := v.Ensure(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	m, err := v.ReadMemo(ctx, name, a, b)
	if err != nil || m.Found || len(m.Versions) != 3 {
		t.Fatalf("first read: %+v, %v; want the two versions, the epoch and no memo", m, err)
	}
	at := time.UnixMicro(time.Now().UnixMicro())
	// Data is any text, the separator included (a tsquery's | in a plan).
	const data = `{"m":"'community' | 'communiti':*A|x"}`
	m.Value, m.At, m.Until, m.Data = 168529, at, at.Add(time.Hour), data
	if err := v.WriteMemo(ctx, name, m, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := v.ReadMemo(ctx, name, a, b)
	if err != nil || !got.Found || got.Value != 168529 || !got.At.Equal(at) || !got.Until.Equal(at.Add(time.Hour)) ||
		got.Data != data {
		t.Fatalf("after the write: %+v, %v", got, err)
	}
	// Another scope set reading the same name does not take it either.
	if other, _ := v.ReadMemo(ctx, name, a); other.Found {
		t.Fatalf("a memo of versions %v found under %v", m.Versions, other.Versions)
	}
	if err := v.Bump(ctx, b); err != nil {
		t.Fatal(err)
	}
	stale, err := v.ReadMemo(ctx, name, a, b)
	if err != nil || stale.Found {
		t.Fatalf("after a bump: %+v, %v; want no memo", stale, err)
	}
	// A memo written late under the old versions never comes back.
	if err := v.WriteMemo(ctx, name, m, time.Minute); err != nil {
		t.Fatal(err)
	}
	if late, _ := v.ReadMemo(ctx, name, a, b); late.Found {
		t.Fatalf("a memo of versions %v read under %v", m.Versions, late.Versions)
	}
	// No expiry to correct for: Until stays zero.
	m = stale
	m.Value, m.At = 0, at
	if err := v.WriteMemo(ctx, name, m, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, _ := v.ReadMemo(ctx, name, a, b); !got.Found || got.Value != 0 || !got.Until.IsZero() || got.Data != "" {
		t.Fatalf("a memo without expiry: %+v", got)
	}
}
