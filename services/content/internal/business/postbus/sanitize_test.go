package postbus

import (
	"strings"
	"testing"
)

func TestSanitizeHTML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []string // must appear
		notWant []string // must not appear
	}{
		{name: "sanitizeKeepsText", in: `<h2>Title</h2><p>Hello <strong>bold</strong> <em>it</em></p><ul><li>a</li></ul><blockquote>q</blockquote><pre><code>x</code></pre>`,
			want: []string{"<h2>Title</h2>", "<strong>bold</strong>", "<em>it</em>", "<li>a</li>", "<blockquote>q</blockquote>", "<pre><code>x</code></pre>"}},
		{name: "sanitizeDropsScript", in: `<p>a</p><script>alert(1)</script><SCRIPT src="https://x"></SCRIPT>`,
			want: []string{"<p>a</p>"}, notWant: []string{"script", "SCRIPT", "alert"}},
		{name: "sanitizeDropsStyle", in: `<style>p{display:none}</style><p style="color:red">a</p>`,
			want: []string{"<p>a</p>"}, notWant: []string{"style", "display", "color"}},
		{name: "sanitizeDropsEventHandlers", in: `<p onclick="x()">a</p><img src="https://example.org/i.png" onerror="x()" alt="i"><a href="/x" onmouseover="x()">l</a>`,
			want: []string{"<p>a</p>", `src="https://example.org/i.png"`, `alt="i"`}, notWant: []string{"onclick", "onerror", "onmouseover", "x()"}},
		{name: "sanitizeDropsJavascriptURLs", in: `<a href="javascript:alert(1)">a</a><a href="JaVaScRiPt:alert(1)">b</a><a href=" javascript:alert(1)">c</a><img src="javascript:alert(1)">`,
			want: []string{"a", "b", "c"}, notWant: []string{"javascript", "JaVaScRiPt", "alert"}},
		{name: "sanitizeDropsDataURLs", in: `<a href="data:text/html,<script>alert(1)</script>">d</a><img src="data:image/svg+xml;base64,PHN2Zz4=">`,
			notWant: []string{"data:", "alert"}},
		{name: "sanitizeDropsFramesAndForms", in: `<iframe src="https://evil.example"></iframe><form action="/x"><input name="p"></form><object data="x"></object>`,
			notWant: []string{"iframe", "evil", "form", "input", "object"}},
		{name: "sanitizeLinksNofollow", in: `<a href="https://example.org/x">ext</a><a href="/blog/y">int</a><a href="mailto:hi@example.org">mail</a>`,
			want: []string{`href="https://example.org/x"`, `rel="nofollow noopener"`, `target="_blank"`, `href="/blog/y"`, `href="mailto:hi@example.org"`}},
		{name: "sanitizeEscapesText", in: `<p>1 &lt; 2 &amp; "q"</p>`, want: []string{"1 &lt; 2 &amp;"}, notWant: []string{"<2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := SanitizeHTML(tc.in)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("lost %q: %s", w, got)
				}
			}
			for _, nw := range tc.notWant {
				if strings.Contains(got, nw) {
					t.Errorf("kept %q: %s", nw, got)
				}
			}
		})
	}
}

func TestSanitizeHTMLIdempotent(t *testing.T) {
	t.Parallel()
	once := SanitizeHTML(benchBody + `<script>x</script><a href="https://e.org" onclick="y">z</a>`)
	if twice := SanitizeHTML(once); twice != once {
		t.Errorf("sanitising twice changed the output:\n%s\n%s", once, twice)
	}
}

func BenchmarkSanitizeHTML(b *testing.B) {
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		SanitizeHTML(benchBody)
	}
}
