package responsecache

import (
	"hash/fnv"
	"strings"
	"testing"
)

// The ETags of every replica and release before this one were hash/fnv's
// FNV-1a: fnv64a must give the same sums.
func TestFNV64a(t *testing.T) {
	for _, s := range []string{"", "a", "v1\x00/v2/jobs?city=berlin\x00\x02", strings.Repeat("xyz", 100)} {
		h := fnv.New64a()
		_, _ = h.Write([]byte(s))
		if got, want := fnv64a([]byte(s)), h.Sum64(); got != want {
			t.Errorf("fnv64a(%q) = %x, hash/fnv %x", s, got, want)
		}
	}
}

// A streamed answer is kept only when it is a whole document of its type.
func TestWholeDocuments(t *testing.T) {
	for _, tc := range []struct {
		contentType, body string
		want              bool
	}{
		{"application/json", `{"a":[1]}`, true},
		{"application/json", `{"a":[1`, false},
		{"application/xml; charset=utf-8", `<?xml version="1.0"?><urlset><url><loc>x</loc></url></urlset>`, true},
		{"application/xml; charset=utf-8", `<?xml version="1.0"?><urlset><url><loc>x</loc></url>`, false},
		{"application/xml", `<?xml version="1.0"?>`, false},
		{"application/rss+xml", `<rss><channel></channel></rss>`, true},
		{"text/javascript", `(function(){})()`, false},
	} {
		if got := whole(tc.contentType, []byte(tc.body)); got != tc.want {
			t.Errorf("%s %q: %v", tc.contentType, tc.body, got)
		}
	}
}
