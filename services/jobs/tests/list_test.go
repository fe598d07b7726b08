package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coworkjobs/coworkjobs/libs/identity"
	"github.com/coworkjobs/coworkjobs/libs/web"
)

type listData struct {
	Jobs       []map[string]any `json:"jobs"`
	Total      int              `json:"total"`
	Pagination *web.Pagination  `json:"pagination"`
}

// seedCity creates n active jobs in a city owned by test (via the API) and
// returns their ids, newest first.
func seedCity(t *testing.T, key identity.Identity, cityID int64, n int, mutate func(i int, b map[string]any)) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := 0; i < n; i++ {
		b := jobBody(fmt.Sprintf("Seeded %d in %d", i, cityID), cityID)
		if mutate != nil {
			mutate(i, b)
		}
		ids[n-1-i] = create(t, key, b).JobID
	}
	// a stable order independent of insert timing: date_added = id order
	_, err := pool.Exec(bgContext, `UPDATE jobs SET date_added = now() - interval '1 day' + id * interval '1 millisecond' WHERE city_id = $1`, cityID)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func list(t *testing.T, path string, id identity.Identity) (resp, listData) {
	t.Helper()
	r := do(t, appFlat, "GET", path, "", &id)
	var d listData
	if r.Status == 200 {
		r.data(t, &d)
	}
	return r, d
}

func TestListFieldsAndFilters(t *testing.T) {
	t.Parallel()
	pro := liveKey(400, 1200)
	ids := seedCity(t, pro, 1400, 6, func(i int, b map[string]any) {
		switch i {
		case 0:
			b["title"] = "Zebra Wrangler"
			b["job_type"] = "parttime"
			b["sal_min"], b["sal_max"] = 30000, 45000
			b["external_url"] = "https://ex.example/j?a=1"
		case 1:
			b["company"] = "Quokka Spaces"
			b["is_remote"] = 1
		case 2:
			b["tags"] = "Barista, Hospitality"
			b["is_remote"] = 1
			b["job_type"] = "freelance"
		}
	})
	// inactive ones never show
	draft := create(t, liveKey(401, 11), jobBody("Draft in 1400", 1400))
	expiredPast := create(t, pro, jobBody("Past due in 1400", 1400))
	_, _ = pool.Exec(bgContext, `UPDATE jobs SET expiration_date = now() - interval '1 minute' WHERE id = $1`, expiredPast.JobID)
	_ = draft

	r, d := list(t, "/v2/jobs?city=city-1400", pro)
	if r.Status != 200 || d.Total != 6 || len(d.Jobs) != 6 || d.Pagination != nil {
		t.Fatalf("%d total %d len %d %s", r.Status, d.Total, len(d.Jobs), r.Body)
	}
	for i, j := range d.Jobs {
		if int64(j["id_job"].(float64)) != ids[i] {
			t.Fatalf("order: job %d is %v, want %d", i, j["id_job"], ids[i])
		}
	}
	// every field with its type
	var zebra map[string]any
	for _, j := range d.Jobs {
		if j["title"] == "Zebra Wrangler" {
			zebra = j
		}
	}
	want := map[string]any{"title": "Zebra Wrangler", "company": "Acme Coworking", "job_type": "parttime",
		"tags": "community,events", "is_remote": false, "city_name": "City 1400", "city_slug": "city-1400",
		"space_name": "Pro Space 1200", "sal_min": "30000", "sal_max": "45000", "currency": "EUR", "apply_url": "",
		"company_logo": "", "external_url": "https://ex.example/j?a=1&ref=coworkjobs"}
	for k, v := range want {
		if zebra[k] != v {
			t.Errorf("%s = %#v, want %#v", k, zebra[k], v)
		}
	}
	page := zebra["page_url"].(string)
	if !strings.HasPrefix(page, "zebra-wrangler-city-1400-") || zebra["url"] != baseURL+"/jobs/"+page {
		t.Errorf("page_url %q url %q", page, zebra["url"])
	}
	for _, k := range []string{"date_added", "expiration_date"} {
		if _, err := time.Parse(time.RFC3339, zebra[k].(string)); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	if len(zebra) != 22 { // the spec's 19, salary_period, workplace_type, external_ref
		t.Errorf("job has %d fields: %v", len(zebra), zebra)
	}

	tests := []struct {
		name  string
		query string
		want  int
	}{
		{"list200QTitle", "q=zebra", 1},
		{"list200QCaseInsensitiveCompany", "q=QUOKKA", 1},
		{"list200QTags", "q=barist", 1},
		{"list200JobType", "job_type=parttime", 1},
		{"list200JobTypeAnyCase", "job_type=%20PartTime", 1},
		{"list200RemoteTrue", "remote=true", 2},
		{"list200Remote1", "remote=1", 2},
		{"list200RemoteFalseIsNoFilter", "remote=false", 6},
		{"list200Remote0IsNoFilter", "remote=0", 6},
		{"list200Combined", "remote=1&job_type=freelance", 1},
		{"list200UnknownCityIsEmpty", "job_type=fulltime&q=nothing-like-this", 0},
		{"list200PageIgnoredWhenUnpaginated", "page=2&per_page=1", 6},
		{"list200SalaryReached", "salary_min=45000&currency=EUR", 1},
		{"list200SalaryNotReached", "salary_min=45001&currency=eur", 0},
		{"list200SalaryOtherCurrency", "salary_min=1&currency=USD", 0},
		{"list200CurrencyAlone", "currency=EUR", 6},
		{"list200Tag", "tag=hospitality", 1},
		{"list200TagNormalised", "tag=%20Hospitality%20", 1},
		{"list200TagIsExact", "tag=hosp", 0},
		{"list200PostedSinceFuture", "posted_since=2100-01-01T00:00:00Z", 0},
		{"list200PostedSincePast", "posted_since=2000-01-01T00:00:00%2B02:00", 6},
		{"list200QSortNewest", "q=zebra&sort=newest", 1},
		{"list200QWordsAnyOrder", "q=wrangler+zebra", 1},
		{"list200QExcluded", "q=acme+-zebra", 4}, // Quokka Spaces is not Acme
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, d := list(t, "/v2/jobs?city=city-1400&"+tc.query, pro)
			if r.Status != 200 || d.Total != tc.want || len(d.Jobs) != tc.want {
				t.Fatalf("%d total %d %s", r.Status, d.Total, r.Body)
			}
		})
	}
}

func TestList422(t *testing.T) {
	t.Parallel()
	key := liveKey(410, 0)
	tests := []struct{ name, query, detail string }{
		{"list422BadJobType", "job_type=gig", "job_type must be one of"},
		{"list422BadRemote", "remote=yes", "remote must be one of 1, true, 0, false"},
		{"list422BadCity", "city=Berlin%20Mitte", "city must be a city slug"},
		{"list422ShortQ", "q=a", "q must contain at least 2 letters or digits"},
		{"list422QWithoutAWord", "q=%25%25%25", "q must contain at least 2 letters or digits"},
		{"list422QOneDigit", "q=%241", "q must contain at least 2 letters or digits"},
		{"list422Sort", "sort=best", "sort must be one of relevance, newest, distance"},
		{"list422SortDistanceWithoutNear", "sort=distance", "sort=distance needs near"},
		{"list422Near", "near=52.5&radius_km=5", "near must be LAT,LON"},
		{"list422RadiusWithoutNear", "radius_km=5", "radius_km needs near"},
		{"list422Radius", "near=52.5,13.4&radius_km=900", "radius_km must be a number above 0 and at most 500"},
		{"list422SalaryWithoutCurrency", "salary_min=40000", "salary_min needs currency"},
		{"list422Salary", "salary_min=-1&currency=EUR", "salary_min must be an integer"},
		{"list422Currency", "currency=BTC", "currency must be one of EUR, USD, GBP"},
		{"list422Tag", "tag=a,b", "tag must be one tag"},
		{"list422PostedSince", "posted_since=yesterday", "posted_since must be an RFC 3339 date-time"},
		{"list422LongQ", "q=" + strings.Repeat("a", 201), "q must be at most 200 characters"},
		{"list422AllAtOnce", "job_type=x&remote=x", "remote must be one of"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, _ := list(t, "/v2/jobs?"+tc.query, key)
			if r.Status != 422 || !r.hasDetail(tc.detail) || r.Env.Error.Code != "validation_error" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
}

func TestListSpaceScoping(t *testing.T) {
	t.Parallel()
	a, b := liveKey(420, 1201), liveKey(421, 1202)
	seedCity(t, a, 1420, 3, nil)
	seedCity(t, b, 1420, 2, func(i int, m map[string]any) { m["title"] = fmt.Sprintf("Other space %d", i) })
	for _, tc := range []struct {
		name string
		id   identity.Identity
		want int
	}{
		{"list200SpaceASeesOwn", a, 3},
		{"list200SpaceBSeesOwn", b, 2},
		{"list200UnscopedSeesAll", liveKey(422, 0), 5},
		{"list200RestrictedScopedKey", identity.Identity{Kind: identity.KindRestricted, KeyID: 423, SpaceID: 1202}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, d := list(t, "/v2/jobs?city=city-1420", tc.id)
			if r.Status != 200 || d.Total != tc.want {
				t.Fatalf("%d %d %s", r.Status, d.Total, r.Body)
			}
		})
	}
}

func TestListStreamsLargeResult(t *testing.T) {
	t.Parallel()
	// 1500 rows inserted directly so the stream crosses several flushes.
	_, err := pool.Exec(bgContext, `INSERT INTO jobs (hash_identifier, space_id, fingerprint, title, company, description,
		job_type, tags, slug, city_id, city_name, city_slug, inv_email, plan_id, status, expiration_date)
		SELECT md5('s' || g), 0, md5('f' || g), 'Stream "quoted" \ job ' || g, 'Co', 'd', 'fulltime', 'a,b', 'stream-job', 1430,
		       'Stream City', 'city-1430', 'x@example.com', 5, 'active', now() + interval '10 days'
		FROM generate_series(1, 1500) g`)
	if err != nil {
		t.Fatal(err)
	}
	r, d := list(t, "/v2/jobs?city=city-1430", liveKey(430, 0))
	if r.Status != 200 || d.Total != 1500 || len(d.Jobs) != 1500 || !json.Valid(r.Body) {
		t.Fatalf("%d total %d len %d", r.Status, d.Total, len(d.Jobs))
	}
	if !strings.HasPrefix(d.Jobs[0]["title"].(string), `Stream "quoted" \ job`) {
		t.Fatalf("title %q", d.Jobs[0]["title"])
	}
}

func TestPagination(t *testing.T) {
	t.Parallel()
	key := liveKey(440, 1203)
	ids := seedCity(t, key, 1440, 7, nil)
	type pg struct {
		count, pages, page, offset, limit int
		next, prev                        bool
	}
	tests := []struct {
		name  string
		query string
		want  pg
		first int64
	}{
		{"page200Defaults", "", pg{7, 1, 1, 0, 20, false, false}, ids[0]},
		{"page200First", "per_page=3", pg{3, 3, 1, 0, 3, true, false}, ids[0]},
		{"page200Middle", "per_page=3&page=2", pg{3, 3, 2, 3, 3, true, true}, ids[3]},
		{"page200Last", "per_page=3&page=3", pg{1, 3, 3, 6, 3, false, true}, ids[6]},
		{"page200PastTheEnd", "per_page=3&page=4", pg{0, 3, 4, 9, 3, false, true}, 0},
		{"page200Max", "per_page=50", pg{7, 1, 1, 0, 50, false, false}, ids[0]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, appPaged, "GET", "/v2/jobs?city=city-1440&"+tc.query, "", &key)
			var d listData
			r.data(t, &d)
			p := d.Pagination
			if r.Status != 200 || p == nil {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			got := pg{p.CurrentCount, p.TotalPages, p.CurrentPage, p.Offset, p.Limit, p.HasNext, p.HasPrevious}
			if got != tc.want || p.Total != 7 || d.Total != 7 || len(d.Jobs) != tc.want.count {
				t.Fatalf("got %+v total %d, want %+v", got, p.Total, tc.want)
			}
			if tc.first != 0 && int64(d.Jobs[0]["id_job"].(float64)) != tc.first {
				t.Fatalf("first job %v want %d", d.Jobs[0]["id_job"], tc.first)
			}
		})
	}
	for _, q := range []string{"per_page=51", "per_page=0", "page=0", "page=x", "per_page=-1"} {
		t.Run("page422_"+q, func(t *testing.T) {
			r := do(t, appPaged, "GET", "/v2/jobs?"+q, "", &key)
			if r.Status != 422 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	t.Run("page200EmptyResult", func(t *testing.T) {
		r := do(t, appPaged, "GET", "/v2/jobs?city=nowhere-at-all", "", &key)
		var d listData
		r.data(t, &d)
		if d.Pagination == nil || d.Pagination.TotalPages != 0 || d.Pagination.HasNext || d.Pagination.HasPrevious || len(d.Jobs) != 0 {
			t.Fatalf("%s", r.Body)
		}
	})
}

// TestFeed is not parallel: the feed is global, and the parallel tests
// (which create jobs) wait until the sequential ones are done.
func TestFeed(t *testing.T) {
	key := liveKey(450, 1204)
	b := jobBody("Feed Job", 1450)
	b["description"] = "<p>" + strings.Repeat("word ", 100) + "</p>"
	seedCity(t, key, 1450, 1, func(int, map[string]any) {})
	create(t, key, b)
	public := identity.Identity{Kind: identity.KindPublic}
	r := do(t, appFlat, "GET", "/v2/vine/jobs?limit=2", "", &public)
	if r.Status != 200 || r.Header.Get("ETag") == "" || !strings.Contains(r.Header.Get("Cache-Control"), "max-age=60") {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	var f web.Feed[struct {
		web.FeedItem
		Job struct {
			Company, CityName, JobType string
			IsRemote                   bool `json:"is_remote"`
		} `json:"_job"`
	}]
	r.data(t, &f)
	if f.Version != "vine/1" || f.FeedURL != baseURL+"/v2/vine/jobs" || len(f.Items) != 2 {
		t.Fatalf("%s", r.Body)
	}
	for _, it := range f.Items {
		if !strings.HasPrefix(it.ID, "job:") || !strings.HasPrefix(it.URL, baseURL+"/jobs/") || len([]rune(it.Summary)) > 280 ||
			strings.Contains(it.Summary, "<") || len(it.Tags) == 0 || it.DatePublished == "" {
			t.Fatalf("item %+v", it)
		}
	}
	again := do(t, appFlat, "GET", "/v2/vine/jobs?limit=2", "", &public, "If-None-Match", r.Header.Get("ETag"))
	if again.Status != 304 {
		t.Fatalf("want 304, got %d", again.Status)
	}
	for _, q := range []string{"limit=0", "limit=51", "limit=x"} {
		r := do(t, appFlat, "GET", "/v2/vine/jobs?"+q, "", &public)
		if r.Status != 422 || !r.hasDetail("limit must be an integer between 1 and 50") {
			t.Fatalf("%s: %d %s", q, r.Status, r.Body)
		}
	}
	// the list itself is not public
	r = do(t, appFlat, "GET", "/v2/jobs", "", &public)
	if r.Status != 403 {
		t.Fatalf("public list: %d", r.Status)
	}
}
