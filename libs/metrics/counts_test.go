package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Every value is exported at 0 before its first event; a nil Counts is a
// no-op.
func TestCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := NewCounts(reg, "things_total", "Things, by outcome.", "outcome", "kept", "lost")
	if n := testutil.CollectAndCount(c.vec); n != 2 {
		t.Fatalf("%d series before any event, want 2", n)
	}
	c.Add("kept", 3)
	c.Add("lost", 0)
	if got := testutil.ToFloat64(c.vec.WithLabelValues("kept")); got != 3 {
		t.Fatalf("kept = %v", got)
	}
	var none *Counts
	none.Add("kept", 1)
}
