package jobbus

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/libs/htmltest"
)

// FuzzNormalizeTags: the spec's tag rule (trimmed, lowercased, deduplicated)
// holds for any input, normalising twice changes nothing, no tag of the input
// is lost, and every tag is valid UTF-8 (Postgres refuses anything else).
func FuzzNormalizeTags(f *testing.F) {
	for _, s := range []string{"a,b", " A , a ,,", "\xff,\u2028", "Remote \t Work,remote work", "İstanbul,ISTANBUL",
		"\u00a0x\u00a0,x", "K,\u212a", ",,,", "a\x00b", strings.Repeat("t,", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tags := NormalizeTags(s)
		seen := map[string]bool{}
		for _, tag := range tags {
			switch {
			case tag == "" || strings.Contains(tag, ","):
				t.Fatalf("empty or compound tag %q from %q", tag, s)
			case !utf8.ValidString(tag):
				t.Fatalf("tag %q from %q is not valid UTF-8", tag, s)
			case tag != strings.TrimSpace(tag) || strings.Contains(tag, "  ") ||
				strings.ContainsFunc(tag, func(r rune) bool { return r != ' ' && unicode.IsSpace(r) }):
				t.Fatalf("tag %q from %q is not trimmed and collapsed", tag, s)
			case seen[tag]:
				t.Fatalf("duplicate tag %q from %q", tag, s)
			}
			seen[tag] = true
		}
		if again := NormalizeTags(strings.Join(tags, ",")); !slices.Equal(again, tags) {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, tags, again)
		}
		for _, part := range strings.Split(s, ",") {
			for _, one := range NormalizeTags(part) {
				if !seen[one] {
					t.Fatalf("tag %q of %q lost: %q", one, s, tags)
				}
			}
		}
	})
}

// descriptionAllow is the spec's basic HTML for job descriptions.
var descriptionAllow = htmltest.Allow{
	Elements:   []string{"p", "br", "ul", "ol", "li", "h2", "h3", "strong", "em", "a"},
	Attributes: map[string][]string{"a": {"href", "rel"}},
	Schemes:    []string{"http", "https", "mailto"},
}

// FuzzSanitizeDescription parses every sanitised description as a browser
// would: only the spec's elements, no script, no event handler, no style, and
// links only to http, https or mailto. Sanitising again changes nothing, and
// the result is valid UTF-8.
func FuzzSanitizeDescription(f *testing.F) {
	for _, s := range []string{
		"<script>x</script>", `<a href="javascript:x">y</a>`, "<p onclick=x>z</p>", "<svg><script>alert(1)</script></svg>",
		"<a href=\"java\tscript:x\">y</a>", `<a href="  JAVASCRIPT:x">y</a>`, `<a href="data:text/html;base64,PHNjcmlwdD4=">y</a>`,
		`<img src=x onerror=alert(1)>`, `<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`,
		`<noscript><p title="</noscript><img src=x onerror=alert(1)>">`, `<<script>script>alert(1)<</script>/script>`,
		`<p>Salary &gt; 40k &amp; <strong>benefits</strong></p>`, `<!--<script>-->`, "<a href=\"https://e.example/\x00\">x</a>",
		`<iframe srcdoc="<script>x</script>">`, `<form action="javascript:x"><button formaction="javascript:x">`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := SanitizeDescription(s)
		if p := htmltest.Problems(out, descriptionAllow); p != nil {
			t.Fatalf("SanitizeDescription(%q) = %q carries %q", s, out, p)
		}
		if !utf8.ValidString(s) {
			return // request bodies are valid UTF-8 before they get here
		}
		if !utf8.ValidString(out) {
			t.Fatalf("SanitizeDescription(%q) = %q is not valid UTF-8", s, out)
		}
		if again := SanitizeDescription(out); again != out {
			t.Fatalf("sanitising twice changes %q:\n%q\n%q", s, out, again)
		}
	})
}

// variant rewrites s in ways the fingerprint promises to ignore: ASCII letter
// case (chosen by the bits of mask) and white space runs around and inside.
func variant(s string, mask uint64) string {
	var b strings.Builder
	b.WriteString(" \t")
	i := 0
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			b.WriteString(" \u00a0\n ")
			continue
		case r >= 'a' && r <= 'z' && mask>>(i%64)&1 == 1:
			r -= 'a' - 'A'
		case r >= 'A' && r <= 'Z' && mask>>(i%64)&1 == 1:
			r += 'a' - 'A'
		}
		i++
		b.WriteRune(r)
	}
	b.WriteString("\r\n")
	return b.String()
}

// urlVariant rewrites a stored external_url in ways the fingerprint promises
// to ignore: scheme and host case, a fragment, parameter order and a ref
// parameter of the client's own.
func urlVariant(stored string, mask uint64) string {
	u, err := url.Parse(stored)
	if err != nil {
		return stored
	}
	u.Scheme = strings.ToUpper(u.Scheme)
	if mask&1 == 1 {
		u.Host = strings.ToUpper(u.Host)
	}
	q := u.Query()
	q.Set(RefParam, "someone-else")
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	slices.Reverse(keys)
	var parts []string
	for _, k := range keys {
		for _, v := range q[k] {
			parts = append(parts, url.QueryEscape(k)+"="+url.QueryEscape(v))
		}
	}
	u.RawQuery = strings.Join(parts, "&")
	u.Fragment, u.RawFragment = "apply-now", ""
	return u.String()
}

// FuzzFingerprint: the fingerprint is 64 lowercase hex characters and does
// not change under the normalisations it documents (case, white space,
// external_url scheme/host case, fragment, parameter order, a client's ref)
// when external_url goes through ExternalURL first, as create does; another
// city is another job.
func FuzzFingerprint(f *testing.F) {
	f.Add("Community Manager", "Acme", int64(1), "https://e.example/j?x=1&ref=abc#top", uint64(0x5555))
	f.Add("  café   MANAGER ", "Ünïcode GmbH", int64(9_000_000_000), "http://E.EXAMPLE:8080/a%20b?b=2&a=1&a=0", uint64(1))
	f.Add("a\tb", "", int64(0), "", uint64(0))
	f.Add("x", "y", int64(-1), "https://e.example/?ref=coworkjobs&ref=x", ^uint64(0))
	f.Add("\xff", "\u2028", int64(3), "https://[::1]/p?q=%zz", uint64(7))
	f.Fuzz(func(t *testing.T, title, company string, city int64, rawURL string, mask uint64) {
		stored, ok := ExternalURL(rawURL)
		if !ok {
			stored = ""
		}
		fp := Fingerprint(title, company, city, stored)
		if len(fp) != 64 || strings.Trim(fp, "0123456789abcdef") != "" {
			t.Fatalf("fingerprint %q is not 64 lowercase hex characters", fp)
		}
		if city != city^1 && Fingerprint(title, company, city^1, stored) == fp {
			t.Fatalf("cities %d and %d share a fingerprint", city, city^1)
		}
		if !utf8.ValidString(title) || !utf8.ValidString(company) {
			return // request bodies are valid UTF-8 before they get here
		}
		vStored := stored
		if stored != "" {
			var ok bool
			vStored, ok = ExternalURL(urlVariant(stored, mask))
			if !ok {
				t.Fatalf("variant of accepted %q refused: %q", stored, urlVariant(stored, mask))
			}
		}
		if got := Fingerprint(variant(title, mask), variant(company, ^mask), city, vStored); got != fp {
			t.Fatalf("fingerprint changed under a documented normalisation:\n%q %q %q\n%q %q %q",
				title, company, stored, variant(title, mask), variant(company, ^mask), vStored)
		}
	})
}

// FuzzExternalURL: an accepted external_url is an absolute http(s) URL with a
// lowercase scheme and host, no credentials, exactly one ref=coworkjobs, and
// accepting it again returns it unchanged (what is stored is what a retry
// stores).
func FuzzExternalURL(f *testing.F) {
	for _, s := range []string{"https://e.example/j", "HTTPS://E.example/j?b=2&ref=x&a=1#f", "javascript:alert(1)",
		"https://u:p@e.example/", "//e.example/x", "http://[::1]:80/?ref=coworkjobs&ref=a", "https://e.example/%zz",
		"http:/e.example", "https://e.example/a b", "https://xn--caf-dma.example/", "https://e.example/?;a=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out, ok := ExternalURL(raw)
		if !ok {
			if out != "" {
				t.Fatalf("refused %q but returned %q", raw, out)
			}
			return
		}
		u, err := url.Parse(out)
		if err != nil {
			t.Fatalf("ExternalURL(%q) = %q does not parse: %v", raw, out, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Host != strings.ToLower(u.Host) {
			t.Fatalf("ExternalURL(%q) = %q", raw, out)
		}
		if refs := u.Query()[RefParam]; len(refs) != 1 || refs[0] != RefValue {
			t.Fatalf("ExternalURL(%q) = %q has ref %q", raw, out, refs)
		}
		if again, ok := ExternalURL(out); !ok || again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", raw, out, again, ok)
		}
	})
}
