package feeds

import (
	"errors"
	"testing"
)

// A source's answer is anyone's bytes: Parse never panics, and what it
// returns has an id per position, none twice, or it is ErrFormat.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"greenhouse.json", "lever.json", "ashby.json", "personio.xml", "jobs.json"} {
		b, err := readFixture(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(len(name)), b)
	}
	f.Fuzz(func(t *testing.T, k uint8, body []byte) {
		kind := Kinds[int(k)%len(Kinds)]
		ps, err := Parse(kind, "https://x.jobs.personio.de/xml", body)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("%s: %v is not ErrFormat", kind, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, p := range ps {
			if p.Ref == "" || seen[p.Ref] {
				t.Fatalf("%s: ref %q empty or twice", kind, p.Ref)
			}
			seen[p.Ref] = true
			_ = p.Body(Defaults{Company: "c"})
		}
	})
}
