package htmltest

import "testing"

var basic = Allow{
	Elements:   []string{"p", "a", "strong"},
	Attributes: map[string][]string{"a": {"href", "rel"}},
	Schemes:    []string{"http", "https", "mailto"},
}

// The checker must see what a browser would run, including markup that a
// substring search misses.
func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		bad      bool
	}{
		{"cleanPasses", `<p>a <strong>b</strong> <a href="https://e.example/" rel="nofollow">c</a></p>`, false},
		{"escapedTextPasses", `&lt;script&gt;alert(1)&lt;/script&gt;`, false},
		{"scriptFound", `<p>x</p><script>alert(1)</script>`, true},
		{"uppercaseScriptFound", `<SCRIPT>alert(1)</SCRIPT>`, true},
		{"svgScriptFound", `<svg><script>alert(1)</script></svg>`, true},
		{"handlerFound", `<p onclick="x()">a</p>`, true},
		{"handlerOnAllowedAttrFound", `<a href="https://e.example/" onmouseover=x>a</a>`, true},
		{"styleFound", `<p style="background:url(javascript:x)">a</p>`, true},
		{"javascriptHrefFound", `<a href="javascript:alert(1)">a</a>`, true},
		{"javascriptWithTabFound", "<a href=\"java\tscript:alert(1)\">a</a>", true},
		{"javascriptLeadingSpaceFound", `<a href="  javascript:alert(1)">a</a>`, true},
		{"dataURLFound", `<a href="data:text/html,x">a</a>`, true},
		{"relativeRefusedUnlessAllowed", `<a href="/x">a</a>`, true},
		{"unknownAttributeFound", `<a href="https://e.example/" target="_blank">a</a>`, true},
		{"commentFound", `<!--[if IE]><script>x</script><![endif]-->`, true},
		{"iframeFound", `<iframe src="https://e.example/"></iframe>`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Problems(tc.in, basic)
			if (len(got) > 0) != tc.bad {
				t.Fatalf("Problems(%q) = %q, want bad=%v", tc.in, got, tc.bad)
			}
		})
	}
	rel := basic
	rel.AllowRelative = true
	if p := Problems(`<a href="/jobs?x=1#y">a</a>`, rel); p != nil {
		t.Fatalf("relative URL refused: %q", p)
	}
}
