package gatewayapp

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

// A shared entry comes back only under the name it was written with, and
// nothing Redis could hold (a truncated or foreign value) passes for one.
func TestEntryEncoding(t *testing.T) {
	name := "v1\x00/v2/jobs?city=berlin\x00\x02\x80\x01"
	body := []byte(`{"success":true,"data":[]}`)
	e := string(encodeEntry(name, "application/json", body))
	a, ok := decodeEntry(e, name)
	if !ok || a.contentType != "application/json" || string(a.body) != string(body) || a.key != name {
		t.Fatalf("round trip: %v %+v", ok, a)
	}
	if _, ok := decodeEntry(e, name+"x"); ok {
		t.Fatal("an entry of another name was taken")
	}
	for i := range len(e) {
		if a, ok := decodeEntry(e[:i], name); ok && len(a.body) == len(body) {
			t.Fatalf("truncated to %d bytes, the whole body came back", i)
		}
	}
	for _, junk := range []string{"", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "\x05ab", strings.Repeat("\x80", 20)} {
		if _, ok := decodeEntry(junk, name); ok {
			t.Fatalf("junk %q decoded", junk)
		}
	}
}
