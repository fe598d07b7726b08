package postbus

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coworkjobs/coworkjobs/libs/htmltest"
)

// bodyAllow is bluemonday's user-generated-content set that SanitizeHTML
// keeps: text, list, table, image and link markup with harmless attributes,
// http/https/mailto or relative URLs.
var bodyAllow = htmltest.Allow{
	Elements: strings.Fields(`article aside details figure section summary h1 h2 h3 h4 h5 h6 hgroup blockquote br div hr
		p span wbr a map area img abbr acronym cite code dfn em figcaption mark s samp strong sub sup var q time b i pre
		small strike tt u bdi bdo rp rt ruby del ins ol ul li dl dt dd table caption col colgroup thead tbody tfoot tr
		td th meter progress`),
	Attributes: map[string][]string{"*": strings.Fields(`dir lang id title class open cite href name alt coords rel
		shape usemap datetime type value align height width src summary span valign abbr colspan rowspan headers
		scope nowrap min max low high optimum target`)},
	Schemes:       []string{"http", "https", "mailto"},
	AllowRelative: true,
}

// FuzzSanitizeHTML parses every sanitised blog body as a browser would: no
// script, style, frame, form or embedded element, no event handler or style
// attribute, and URLs only http, https, mailto or relative. The result is
// valid UTF-8 when the input was.
func FuzzSanitizeHTML(f *testing.F) {
	for _, s := range []string{
		`<p>a</p><script>alert(1)</script>`, `<svg><script>alert(1)</script></svg>`, `<img src=x onerror=alert(1)>`,
		`<a href="JaVaScRiPt:alert(1)">a</a>`, "<a href=\"java\tscript:alert(1)\">a</a>", `<img src="data:image/svg+xml,<svg onload=alert(1)>">`,
		`<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`, `<table><td background="javascript:x">`,
		`<a href="/relative" target="_blank">ok</a>`, `<blockquote cite="javascript:x">q</blockquote>`, `<!-- c --><p>x`,
		`<details open ontoggle=alert(1)>`, `<object data="javascript:x"></object>`, `<base href="javascript:x/">`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := SanitizeHTML(s)
		if p := htmltest.Problems(out, bodyAllow); p != nil {
			t.Fatalf("SanitizeHTML(%q) = %q carries %q", s, out, p)
		}
		if utf8.ValidString(s) && !utf8.ValidString(out) {
			t.Fatalf("SanitizeHTML(%q) = %q is not valid UTF-8", s, out)
		}
	})
}
