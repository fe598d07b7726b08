package redisstore

import (
	"strings"
	"testing"
)

// A shared entry comes back only under the name it was written with, and
// nothing Redis could hold (a truncated or foreign value) passes for one.
func TestEntryEncoding(t *testing.T) {
	name := "v1\x00/v2/jobs?city=berlin\x00\x02\x80\x01"
	body := []byte(`{"success":true,"data":[]}`)
	e := string(encodeEntry(name, "application/json", body))
	a, ok := decodeEntry(e, name)
	if !ok || a.ContentType != "application/json" || string(a.Body) != string(body) || a.Name != name {
		t.Fatalf("round trip: %v %+v", ok, a)
	}
	if _, ok := decodeEntry(e, name+"x"); ok {
		t.Fatal("an entry of another name was taken")
	}
	for i := range len(e) {
		if a, ok := decodeEntry(e[:i], name); ok && len(a.Body) == len(body) {
			t.Fatalf("truncated to %d bytes, the whole body came back", i)
		}
	}
	for _, junk := range []string{"", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "\x05ab", strings.Repeat("\x80", 20)} {
		if _, ok := decodeEntry(junk, name); ok {
			t.Fatalf("junk %q decoded", junk)
		}
	}
}
