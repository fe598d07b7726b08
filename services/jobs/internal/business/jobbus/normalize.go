package jobbus

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/microcosm-cc/bluemonday"
)

// RefParam is the referral query parameter appended to every external_url.
const (
	RefParam = "ref"
	RefValue = "coworkjobs"
)

// NormalizeTags trims, lowercases and deduplicates a comma-separated tag
// list, keeping the first occurrence's position and dropping empty entries.
// Inner whitespace runs collapse to one space ("Remote   Work" -> "remote work").
func NormalizeTags(raw string) []string {
	parts := strings.Split(raw, ",")
	out := make([]string, 0, len(parts))
	seen := make(map[string]struct{}, len(parts))
	for _, p := range parts {
		t := collapseSpaces(strings.ToLower(p))
		if t == "" {
			continue
		}
		if _, dup := seen[t]; dup {
			continue
		}
		seen[t] = struct{}{}
		out = append(out, t)
	}
	return out
}

// collapseSpaces trims s and replaces every run of Unicode white space inside
// it with one ASCII space.
func collapseSpaces(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// NormalizeText is the normalisation of the fingerprint's text parts:
// Unicode white space runs collapsed to one space, trimmed, lowercased.
func NormalizeText(s string) string { return strings.ToLower(collapseSpaces(s)) }

// Fingerprint is the dedupe hash of a job: the lowercase hex SHA-256 of
//
//	NormalizeText(title) + "\n" + NormalizeText(company) + "\n" + decimal(city id) + "\n" + fingerprintURL(external_url)
//
// where NormalizeText trims, collapses every run of white space to one space
// and lowercases, and fingerprintURL is the stored external_url (already
// carrying ref=coworkjobs, query parameters sorted by name) with its scheme and
// host lowercased and its fragment dropped; an absent external_url is "".
// Two creates that differ only in case, spacing, fragment, parameter order or
// an existing ref parameter therefore share one fingerprint.
func Fingerprint(title, company string, cityID int64, externalURL string) string {
	h := sha256.New()
	h.Write([]byte(NormalizeText(title)))
	h.Write([]byte{'\n'})
	h.Write([]byte(NormalizeText(company)))
	h.Write([]byte{'\n'})
	h.Write(strconv.AppendInt(nil, cityID, 10))
	h.Write([]byte{'\n'})
	h.Write([]byte(fingerprintURL(externalURL)))
	return hex.EncodeToString(h.Sum(nil))
}

func fingerprintURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// ExternalURL validates an external (source) URL and returns it with
// ref=coworkjobs set: other query parameters are kept, an existing ref is
// replaced, and parameters come out sorted by name. ok is false for anything
// but an absolute http(s) URL with a host.
func ExternalURL(raw string) (string, bool) {
	u, ok := parseHTTPURL(raw)
	if !ok {
		return "", false
	}
	q := u.Query()
	q.Set(RefParam, RefValue)
	u.RawQuery = q.Encode()
	return bounded(u.String())
}

// bounded applies MaxURLLen to a normalised URL: escaping can lengthen it,
// and the bound is on what is stored (so a stored URL sent again is accepted).
func bounded(u string) (string, bool) {
	if len(u) > MaxURLLen {
		return "", false
	}
	return u, true
}

// ApplyURL validates an application link: an absolute http(s) URL or a
// mailto: link with a valid address.
func ApplyURL(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(strings.ToLower(raw), "mailto:") {
		addr := raw[len("mailto:"):]
		if i := strings.IndexByte(addr, '?'); i >= 0 {
			addr = addr[:i]
		}
		if !ValidEmail(addr) {
			return "", false
		}
		return raw, true
	}
	u, ok := parseHTTPURL(raw)
	if !ok {
		return "", false
	}
	return bounded(u.String())
}

func parseHTTPURL(raw string) (*url.URL, bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > MaxURLLen || strings.ContainsAny(raw, " \t\r\n") {
		return nil, false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, false
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Hostname() == "" || u.User != nil {
		return nil, false
	}
	u.Scheme = scheme
	u.Host = strings.ToLower(u.Host)
	return u, true
}

// ValidEmail reports whether s is one bare e-mail address (no display name).
func ValidEmail(s string) bool {
	if s == "" || len(s) > 254 {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	return at > 0 && strings.Contains(s[at+1:], ".")
}

// descriptionPolicy allows only the spec's basic HTML: p, br, ul, ol, li, h2,
// h3, strong, em and a with an http, https or mailto href. Everything else is
// dropped (script and style with their content), and links get rel=nofollow.
var descriptionPolicy = func() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "ul", "ol", "li", "h2", "h3", "strong", "em")
	p.AllowAttrs("href").OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireParseableURLs(true)
	p.RequireNoFollowOnLinks(true)
	return p
}()

var stripPolicy = bluemonday.StrictPolicy()

// SanitizeDescription returns the description with only the allowed HTML left.
// Plain text passes through with HTML special characters escaped.
func SanitizeDescription(s string) string {
	return strings.TrimSpace(descriptionPolicy.Sanitize(s))
}

// Summary is the plain text of a sanitised description, white space
// collapsed, cut to at most max runes (an ellipsis marks a cut).
func Summary(description string, max int) string {
	text := collapseSpaces(html.UnescapeString(stripPolicy.Sanitize(strings.NewReplacer("<", " <", ">", "> ").Replace(description))))
	if utf8.RuneCountInString(text) <= max {
		return text
	}
	r := []rune(text)
	return strings.TrimSpace(string(r[:max-1])) + "…"
}

// Slug makes the URL slug of a job from its title and city slug: lowercase
// ASCII letters and digits separated by single hyphens (accents folded
// where they map to ASCII, other characters dropped), at most 80 characters.
func Slug(title, citySlug string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(title + " " + citySlug) {
		if f, ok := foldASCII[r]; ok {
			r = f
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(r)
			if b.Len() >= 80 {
				break
			}
			continue
		}
		hyphen = true
	}
	s := strings.TrimRight(b.String(), "-")
	if s == "" {
		s = "job"
	}
	return s
}

var foldASCII = map[rune]rune{
	'à': 'a', 'á': 'a', 'â': 'a', 'ã': 'a', 'ä': 'a', 'å': 'a', 'ç': 'c', 'è': 'e', 'é': 'e', 'ê': 'e', 'ë': 'e',
	'ì': 'i', 'í': 'i', 'î': 'i', 'ï': 'i', 'ñ': 'n', 'ò': 'o', 'ó': 'o', 'ô': 'o', 'õ': 'o', 'ö': 'o', 'ø': 'o',
	'ù': 'u', 'ú': 'u', 'û': 'u', 'ü': 'u', 'ý': 'y', 'ÿ': 'y', 'ß': 's', 'ł': 'l', 'ś': 's', 'ź': 'z', 'ż': 'z',
	'ć': 'c', 'ń': 'n', 'ę': 'e', 'ą': 'a', 'č': 'c', 'š': 's', 'ž': 'z', 'ř': 'r', 'ě': 'e', 'ů': 'u',
}

// plainLine adds a problem when v, a one-line field, holds a character that
// is not text: a control character other than white space (which
// collapseSpaces turns into one space), or a bidi embedding, override or
// isolate, which reorders how the text around it is displayed (a title shown
// reversed in a mail or a listing). Marks such as U+200F stay: right-to-left
// text needs no more.
func plainLine(v, name string, p *[]string) {
	for _, r := range v {
		if unicode.IsControl(r) && !unicode.IsSpace(r) || r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' {
			*p = append(*p, fmt.Sprintf("%s must not contain control or bidi override characters (found U+%04X)", name, r))
			return
		}
	}
}
