package jobbus

import (
	"strings"
	"testing"
)

func TestNormalizeTags(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"trimLowerDedupe", " Community ,events,, COMMUNITY ", "community,events"},
		{"keepsOrder", "b,a,B,c", "b,a,c"},
		{"collapsesInnerSpace", "Remote \t  Work", "remote work"},
		{"onlyEmpties", " , ,", ""},
		{"unicode", "Café,CAFÉ", "café"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(NormalizeTags(tc.in), ","); got != tc.want {
				t.Fatalf("%q -> %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSanitizeDescription(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plainTextEscaped", "Salary > 40k & benefits", "Salary &gt; 40k &amp; benefits"},
		{"allowedKept", "<h2>Role</h2><p>Do <strong>x</strong> and <em>y</em><br></p><ul><li>a</li></ul><ol><li>b</li></ol><h3>t</h3>",
			"<h2>Role</h2><p>Do <strong>x</strong> and <em>y</em><br></p><ul><li>a</li></ul><ol><li>b</li></ol><h3>t</h3>"},
		{"scriptDropped", "<p>a<script>alert(1)</script>b</p>", "<p>ab</p>"},
		{"styleDropped", "<style>body{}</style><p>x</p>", "<p>x</p>"},
		{"onAttributesDropped", `<p onclick="evil()" style="color:red">x</p>`, "<p>x</p>"},
		{"javascriptLinkDropped", `<a href="javascript:alert(1)">x</a>`, "x"},
		{"httpLinkKept", `<a href="https://e.example/a" target="_blank">x</a>`, `<a href="https://e.example/a" rel="nofollow">x</a>`},
		{"mailtoKept", `<a href="mailto:a@b.example">x</a>`, `<a href="mailto:a@b.example" rel="nofollow">x</a>`},
		{"otherTagsUnwrapped", "<div><span>x</span><h1>y</h1><img src=x onerror=alert(1)></div>", "xy"},
		{"iframeDropped", `<iframe src="https://evil.example"></iframe>ok`, "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SanitizeDescription(tc.in); got != tc.want {
				t.Fatalf("%q -> %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestExternalURL(t *testing.T) {
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"appended", "https://e.example/j", "https://e.example/j?ref=coworkjobs", true},
		{"keepsOthersReplacesRef", "https://E.example/j?b=2&ref=x&a=1", "https://e.example/j?a=1&b=2&ref=coworkjobs", true},
		{"rejectsJavascript", "javascript:alert(1)", "", false},
		{"rejectsRelative", "/jobs/1", "", false},
		{"rejectsFTP", "ftp://e.example/x", "", false},
		{"rejectsCredentials", "https://u:p@e.example/", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ExternalURL(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("%q -> %q %v", tc.in, got, ok)
			}
		})
	}
}

func TestFingerprintNormalisation(t *testing.T) {
	a := Fingerprint("Community Manager", "Acme", 1, "https://e.example/j?ref=coworkjobs&x=1")
	same := []string{
		Fingerprint("  community   MANAGER ", "acme", 1, "https://E.EXAMPLE/j?ref=coworkjobs&x=1#frag"),
	}
	for _, s := range same {
		if s != a {
			t.Fatal("normalised variants differ")
		}
	}
	for _, d := range []string{
		Fingerprint("Community Manager", "Acme", 2, "https://e.example/j?ref=coworkjobs&x=1"),
		Fingerprint("Community Manager", "Acme", 1, ""),
		Fingerprint("Community Manager", "Acme Inc", 1, "https://e.example/j?ref=coworkjobs&x=1"),
	} {
		if d == a {
			t.Fatal("different jobs share a fingerprint")
		}
	}
	if len(a) != 64 {
		t.Fatal(a)
	}
}

func TestSummaryAndSlug(t *testing.T) {
	if s := Summary("<p>Hello <strong>world</strong></p><p>again &amp; more</p>", 280); s != "Hello world again & more" {
		t.Fatalf("%q", s)
	}
	if s := Summary(strings.Repeat("abc ", 100), 10); len([]rune(s)) > 10 || !strings.HasSuffix(s, "…") {
		t.Fatalf("%q", s)
	}
	if s := Slug("Café Manager (m/w/d)!", "berlin"); s != "cafe-manager-m-w-d-berlin" {
		t.Fatalf("%q", s)
	}
}
