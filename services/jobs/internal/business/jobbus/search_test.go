package jobbus

import (
	"reflect"
	"testing"
)

func TestParseSearch(t *testing.T) {
	tests := []struct {
		q    string
		want Search
		ok   bool
	}{
		{"community manager", Search{Words: []string{"community", "manager"}, Prefix: []bool{false, true}, Fuzz: []int{2, 1}}, true},
		{"Community  Manager ", Search{Words: []string{"community", "manager"}, Prefix: []bool{false, false}, Fuzz: []int{2, 1}}, true},
		{`"community manager" berlin`, Search{Words: []string{"berlin"}, Prefix: []bool{true}, Fuzz: []int{1}, Phrases: []string{"community manager"}}, true},
		{`barista -intern`, Search{Words: []string{"barista"}, Prefix: []bool{false}, Fuzz: []int{1}, Excluded: []string{"intern"}}, true},
		{`full-time café`, Search{Words: []string{"full", "time", "café"}, Prefix: []bool{false, false, true}, Fuzz: []int{0, 0, 0}}, true},
		{`"open phrase`, Search{Phrases: []string{"open phrase"}}, true},
		{`-- " " !!`, Search{}, false},
		{`Zürich`, Search{Words: []string{"zürich"}, Prefix: []bool{true}, Fuzz: []int{1}}, true},
		{`ab`, Search{Words: []string{"ab"}, Prefix: []bool{true}, Fuzz: []int{0}}, true},
	}
	for _, tc := range tests {
		got, ok := ParseSearch(tc.q)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseSearch(%q) = %+v %v, want %+v %v", tc.q, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseSearch(f *testing.F) {
	for _, q := range []string{"community manager", `"a b" -c d`, "-", `"`, "Zürich café"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		s, ok := ParseSearch(q)
		if ok == s.Empty() || len(s.Words) != len(s.Prefix) || len(s.Words) != len(s.Fuzz) {
			t.Fatalf("%q: %+v %v", q, s, ok)
		}
		for _, w := range append(append(append([]string{}, s.Words...), s.Excluded...), s.Phrases...) {
			if w == "" {
				t.Fatalf("%q: an empty term in %+v", q, s)
			}
		}
	})
}
