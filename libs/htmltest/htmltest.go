// Package htmltest checks sanitised HTML the way a browser would read it, for
// the sanitiser tests and fuzz targets of the services: the fragment is parsed
// with the HTML5 algorithm and every element, attribute and URL is compared
// with what the caller allows. Matching substrings ("<script") would miss
// markup a browser still runs; walking the parsed tree does not.
package htmltest

import (
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Allow says what a sanitised fragment may hold: element names, and per
// element the attribute names ("*" for attributes allowed on every element).
type Allow struct {
	Elements   []string
	Attributes map[string][]string
	// Schemes a URL attribute may use; a relative URL has none and passes
	// only with AllowRelative.
	Schemes       []string
	AllowRelative bool
}

// urlAttrs are the attributes a browser follows or loads.
var urlAttrs = map[string]bool{
	"href": true, "src": true, "action": true, "formaction": true, "cite": true, "background": true,
	"poster": true, "srcset": true, "data": true, "codebase": true, "xlink:href": true, "longdesc": true,
}

// Problems parses fragment as the content of a <body> and returns every way
// it exceeds allow (nil when it is safe by that measure). Whatever allow says,
// on* event handlers, style attributes and comments are problems.
func Problems(fragment string, allow Allow) []string {
	nodes, err := html.ParseFragment(strings.NewReader(fragment), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
	if err != nil {
		return []string{"does not parse: " + err.Error()}
	}
	var out []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.CommentNode:
			out = append(out, "comment "+fmt.Sprintf("%q", n.Data))
		case html.ElementNode:
			name := n.Data
			if n.Namespace != "" {
				name = n.Namespace + " " + name
			}
			if !has(allow.Elements, name) {
				out = append(out, "element <"+name+">")
			}
			for _, a := range n.Attr {
				key := strings.ToLower(a.Key)
				if a.Namespace != "" {
					key = a.Namespace + ":" + key
				}
				switch {
				case strings.HasPrefix(key, "on"):
					out = append(out, "event handler "+key+" on <"+name+">")
				case key == "style":
					out = append(out, "style attribute on <"+name+">")
				case !has(allow.Attributes[name], key) && !has(allow.Attributes["*"], key):
					out = append(out, "attribute "+key+" on <"+name+">")
				}
				if urlAttrs[key] {
					if p := checkURL(a.Val, allow); p != "" {
						out = append(out, key+" on <"+name+">: "+p)
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return out
}

// checkURL reads a URL attribute as a browser does: leading and trailing
// white space and control characters are ignored, and tabs and newlines
// inside are removed before the scheme is looked at ("java\tscript:").
func checkURL(v string, allow Allow) string {
	v = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, strings.TrimFunc(v, func(r rune) bool { return r <= ' ' }))
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Sprintf("unparseable URL %q", v)
	}
	if u.Scheme == "" {
		if i := strings.IndexByte(v, ':'); i >= 0 && !strings.ContainsAny(v[:i], "/?#") {
			return fmt.Sprintf("URL %q has a scheme the parser missed", v)
		}
		if !allow.AllowRelative {
			return fmt.Sprintf("relative URL %q", v)
		}
		return ""
	}
	if !has(allow.Schemes, strings.ToLower(u.Scheme)) {
		return fmt.Sprintf("URL scheme %q", u.Scheme)
	}
	return ""
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
