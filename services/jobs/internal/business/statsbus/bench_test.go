package statsbus

import (
	"context"
	"testing"
	"time"
)

type nopWriter struct{}

func (nopWriter) Write(context.Context, []Event) error              { return nil }
func (nopWriter) Purge(context.Context, time.Time, time.Time) error { return nil }

// BenchmarkCountView is what a page view or an apply click costs its
// request: classify the agent, the day's visitor hash, the buffer's append
// (the write is elsewhere, in batches). docs/benchmarks.md has the figures.
func BenchmarkCountView(b *testing.B) {
	v, _ := NewVisitors([]byte("0123456789abcdef0123456789abcdef"))
	r := NewRecorder(nopWriter{}, RecorderConfig{MaxPending: 1 << 30, BatchSize: 1 << 30})
	const ua = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			now := time.Now()
			e := Event{JobID: 42, Kind: KindView, Channel: ChannelPage, At: now, Agent: Classify(ua)}
			e.Visitor = v.Of(now, "203.0.113.7", ua)
			r.Record(e)
		}
	})
}
