package tests

import (
	"fmt"
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/identity"
)

// BenchmarkBatch100 is one synchronous batch of 100 new jobs through the
// jobs API (in process, no gateway), and the same batch sent again
// (unchanged: the import's steady state); rows/s is what docs/benchmarks.md
// records beside row d.
func BenchmarkBatch100(b *testing.B) {
	platform := identity.Identity{Kind: identity.KindLive, KeyID: 4900, TrustedImporter: true, Scopes: []string{"jobs:write"}}
	for _, mode := range []string{"new", "unchanged"} {
		b.Run(mode, func(b *testing.B) {
			body := jsonBody(b, map[string]any{"jobs": batchJobs("bench-"+mode, 4900, 100, nil)})
			if mode == "unchanged" {
				do(b, appFlat, "POST", "/v2/jobs/batch", body, &platform)
			}
			b.ResetTimer()
			for i := range b.N {
				if mode == "new" {
					body = jsonBody(b, map[string]any{"jobs": batchJobs(fmt.Sprintf("bench-%d-%d", b.N, i), 4900, 100, nil)})
				}
				if r := do(b, appFlat, "POST", "/v2/jobs/batch", body, &platform); r.Status != 200 {
					b.Fatalf("%d %s", r.Status, r.Body)
				}
			}
			b.ReportMetric(float64(100*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
