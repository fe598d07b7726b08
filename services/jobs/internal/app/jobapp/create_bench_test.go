package jobapp

import (
	"testing"

	"github.com/coworkjobs/coworkjobs/libs/web"
)

// benchBody is make bench's create body (rows d, e1, e2).
var benchBody = []byte(`{"title":"Bench community host 123","company":"Bench Coworking","description":"<p>Welcome members, run events and keep the desk. Ref 123.</p><ul><li>Community</li><li>Events</li></ul>","job_type":"fulltime","tags":"Community, events ,hospitality,community","id_city":12,"external_url":"https://jobs.bench.example/123","is_remote":0,"sal_min":30000,"sal_max":42000}`)

// BenchmarkCreateRequest reads a create body as POST /v2/jobs does before
// any rule runs: decoded, its canonical form for the Idempotency-Key hash,
// its fields read (every create and every replay pays it).
func BenchmarkCreateRequest(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var req createRequest
		if err := web.DecodeJSONBytes(benchBody, &req); err != nil {
			b.Fatal(err)
		}
		if _, err := req.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
		if in := req.toInput(); len(in.TypeProblems) > 0 {
			b.Fatal(in.TypeProblems)
		}
	}
}
