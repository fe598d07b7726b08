package tests

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/services/jobs/internal/app/reachapp"
)

// BenchmarkSitemapPart streams a sitemap part of 5 000 and of 50 000 jobs
// (a full part) over real HTTP and reports the time to the first byte, the
// whole answer, and how far the heap and the process's resident memory grew
// while it was streamed, which must not grow with the part's size
// (docs/benchmarks.md). Run alone: go test -run '^$' -bench SitemapPart.
func BenchmarkSitemapPart(b *testing.B) {
	// Part 201 holds ids (10 000 000, 10 050 000]: 50 000 jobs; part 203
	// (10 100 000, 10 150 000]: 5 000.
	for _, p := range []struct {
		name      string
		part, ids int
	}{{"5k", 203, 5000}, {"50k", 201, 50000}} {
		b.Run(p.name, func(b *testing.B) { benchSitemapPart(b, p.part, p.ids) })
	}
}

func benchSitemapPart(b *testing.B, part, jobs int) {
	first := int64(part-1) * 50000
	if _, err := pool.Exec(bgContext, `INSERT INTO jobs (id, hash_identifier, space_id, key_id, fingerprint, title, company,
		description, job_type, tags, is_remote, slug, city_id, city_name, city_slug, inv_email, plan_id, status, expiration_date)
		SELECT $1 + g, 'bench-' || ($1 + g), 0, 0, 'bench-fp-' || ($1 + g), 'Bench community manager ' || g, 'Bench Coworking',
		'<p>Run the community.</p>', 'fulltime', 'community', false, 'bench-community-manager-' || g, 1, 'Berlin', 'berlin',
		'bench@example.org', 5, 'active', now() + interval '30 days' FROM generate_series(1, $2::integer) g
		ON CONFLICT DO NOTHING`, first, jobs); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = pool.Exec(bgContext, `DELETE FROM jobs WHERE id > $1 AND id <= $1 + 50000`, first) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	app := reachOn(newBus(baseURL, dirURL), reachapp.Config{})
	go func() { _ = app.Listener(ln) }()
	b.Cleanup(func() { _ = app.Shutdown() })
	target := "http://" + ln.Addr().String() + "/sitemap.xml?part=" + strconv.Itoa(part)

	var ttfb, total time.Duration
	var heapPeak, rssGrowth float64
	b.ResetTimer()
	for range b.N {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		rss0 := rssKB()
		var peak atomic.Uint64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			var m runtime.MemStats
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
				}
			}
		}()
		req, _ := http.NewRequest("GET", target, nil)
		h, err := codec.Sign(identity.Identity{Kind: identity.KindPublic}, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set(identity.Header, h)
		start := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(res.Body)
		if _, err := br.Peek(1); err != nil {
			b.Fatal(err)
		}
		first := time.Since(start)
		n, urls := 0, 0
		for {
			line, err := br.ReadString('\n')
			n += len(line)
			if strings.HasPrefix(line, "<url>") {
				urls++
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		res.Body.Close()
		total += time.Since(start)
		ttfb += first
		close(stop)
		<-sampled
		if urls != jobs {
			b.Fatalf("the part lists %d URLs (%d bytes), want %d", urls, n, jobs)
		}
		heapPeak = max(heapPeak, float64(int64(peak.Load())-int64(before.HeapInuse))/(1<<20))
		rssGrowth = max(rssGrowth, float64(rssKB()-rss0)/1024)
	}
	b.ReportMetric(float64(ttfb.Milliseconds())/float64(b.N), "ttfb-ms")
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "total-ms")
	b.ReportMetric(heapPeak, "heap-growth-MB")
	b.ReportMetric(rssGrowth, "rss-growth-MB")
}

// rssKB is the process's resident set (VmRSS) in KiB, 0 where /proc has none.
func rssKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}
