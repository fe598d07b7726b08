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
