package outbound

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Target is what a registered URL (a webhook endpoint, an import feed) may
// be, and how its refusals read for that kind of target.
type Target struct {
	MaxLen    int            // characters
	AllowHTTP bool           // plain http accepted (local runs)
	Allow     []netip.Prefix // special addresses the operator allows
	// The refusals' own words: Empty for no URL, Example an https URL of
	// the kind, PlainHTTP and Refused the ends of those refusals.
	Empty, Example, PlainHTTP, Refused string
}

// CheckURL is raw as it will be stored, or "" and why it is refused,
// naming the field url: registration refuses what delivery would.
func (t Target) CheckURL(raw string) (string, string) {
	s := strings.TrimSpace(raw)
	u, err := url.Parse(s)
	scheme := ""
	if err == nil {
		scheme = u.Scheme
	}
	switch {
	case s == "":
		return "", t.Empty
	case utf8.RuneCountInString(s) > t.MaxLen:
		return "", fmt.Sprintf("url must be at most %d characters", t.MaxLen)
	case err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" || strings.ContainsFunc(s, unicode.IsSpace):
		return "", "url must be an absolute https URL, e.g. " + t.Example
	case scheme != "https" && !(scheme == "http" && t.AllowHTTP):
		if scheme == "http" {
			return "", "url must use https (" + t.PlainHTTP + ")"
		}
		return "", "url must be an http(s) URL"
	case u.User != nil:
		return "", "url must not carry a user name or password"
	case u.Fragment != "":
		return "", "url must not have a #fragment"
	case u.Port() != "" && !validPort(u.Port()):
		return "", "url has an invalid port"
	case RefusedHost(u.Hostname(), t.Allow):
		return "", "url must not name a private, loopback, link-local or metadata address (" + t.Refused + ")"
	}
	return u.String(), ""
}

func validPort(s string) bool {
	_, err := net.LookupPort("tcp", s)
	return err == nil && s != "0"
}
