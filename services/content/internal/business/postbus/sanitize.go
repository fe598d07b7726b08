package postbus

import "github.com/microcosm-cc/bluemonday"

// policy is built once: a bluemonday policy is safe for concurrent use once
// it is configured, and building one costs far more than using it.
var policy = newPolicy()

// newPolicy is bluemonday's user-generated-content policy: the usual text,
// list, table, image and link markup with standard attributes; no script,
// style, iframe, form or event-handler (on*) attribute; no style attribute;
// URLs must parse and use http, https or mailto (so no javascript: or data:);
// links get rel="nofollow", and links to other sites open in a new tab with
// rel="noopener".
func newPolicy() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireParseableURLs(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
}

// SanitizeHTML returns body with everything unsafe removed, ready to be
// inserted into a page.
func SanitizeHTML(body string) string { return policy.Sanitize(body) }
