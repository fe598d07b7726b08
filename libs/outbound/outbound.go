// Package outbound is the HTTP client for requests to addresses users
// choose (webhook endpoints): http(s) only, a deadline on the whole request,
// no redirects followed, a bounded read of the answer, and no private,
// loopback, link-local, metadata or other special address, checked at dial
// time on the address actually dialled, after DNS resolution (a name that
// resolves, or re-resolves, to 127.0.0.1 is refused like the literal),
// unless the operator allowlists it.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Defaults of a Client.
const (
	DefaultTimeout = 10 * time.Second
	DefaultMaxRead = 64 << 10
)

// ErrRefused is a target whose address is not allowed.
var ErrRefused = errors.New("outbound: address not allowed")

// Config says what a client may reach.
type Config struct {
	Timeout time.Duration // the whole request; 0: DefaultTimeout
	MaxRead int64         // bytes of the answer read; 0: DefaultMaxRead
	// Allow lists prefixes that may be dialled although special
	// (127.0.0.0/8 for make run's local receiver).
	Allow []netip.Prefix
	// IdlePerHost is how many idle connections are kept per host (0: 4);
	// a sender with that many requests in flight to one host reuses them
	// instead of dialling each time.
	IdlePerHost int
}

// ParseAllow reads a comma-separated list of CIDR prefixes or addresses;
// "loopback" stands for 127.0.0.0/8 and ::1.
func ParseAllow(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
			continue
		case f == "loopback":
			out = append(out, netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"))
		case strings.Contains(f, "/"):
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("outbound: %q is not a CIDR prefix", f)
			}
			out = append(out, p.Masked())
		default:
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("outbound: %q is not an address or prefix", f)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out, nil
}

// special are the ranges no user-chosen request may reach unless
// allowlisted: IANA's special-purpose registries, the cloud metadata
// address among them (169.254.169.254, link-local).
var special = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/128", "::1/128", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23",
		"2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10", "ff00::/8",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// Allowed reports whether a may be dialled under allow.
func Allowed(a netip.Addr, allow []netip.Prefix) bool {
	a = a.Unmap()
	for _, p := range allow {
		if p.Contains(a) {
			return true
		}
	}
	for _, p := range special {
		if p.Contains(a) {
			return false
		}
	}
	return a.IsGlobalUnicast()
}

// RefusedHost reports whether host (a URL's Hostname) is itself an address
// that Allowed refuses, in any form a resolver takes for one: dotted quads,
// IPv6 (IPv4-mapped and zoned too), and inet_aton's shorter, decimal, octal
// and hex forms (2130706433, 0x7f.1, 0177.0.0.1); or a name that is loopback
// by definition (localhost, *.localhost, RFC 6761). Registration refuses
// these at once; names that resolve to such an address are refused when
// dialled (DNS may change its answer after registration).
func RefusedHost(host string, allow []netip.Prefix) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return !Allowed(netip.MustParseAddr("127.0.0.1"), allow)
	}
	a, ok := LiteralAddr(h)
	return ok && !Allowed(a, allow)
}

// LiteralAddr is the address host spells, if it spells one (RefusedHost's
// forms).
func LiteralAddr(host string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return a.WithZone(""), true
	}
	// inet_aton: one to four parts, each decimal, octal (leading 0) or hex
	// (0x); the last fills the bytes the others leave.
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var v [4]uint64
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 0, 32) // base 0: 0x…, 0…, decimal
		if p == "" || err != nil || strings.HasPrefix(p, "+") || strings.Contains(p, "_") {
			return netip.Addr{}, false
		}
		v[i] = n
	}
	last := len(parts) - 1
	var ip uint64
	for i := range last {
		if v[i] > 0xff {
			return netip.Addr{}, false
		}
		ip |= v[i] << (24 - 8*i)
	}
	if v[last] >= 1<<(32-8*last) {
		return netip.Addr{}, false
	}
	ip |= v[last]
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

// Client sends requests under a Config.
type Client struct {
	http    *http.Client
	maxRead int64
}

// New returns a client for cfg.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRead <= 0 {
		cfg.MaxRead = DefaultMaxRead
	}
	allow := cfg.Allow
	d := &net.Dialer{Timeout: cfg.Timeout, Control: func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !Allowed(ap.Addr(), allow) {
			return fmt.Errorf("%w: %s", ErrRefused, address)
		}
		return nil
	}}
	idle := cfg.IdlePerHost
	if idle <= 0 {
		idle = 4
	}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial for us, unchecked
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           max(100, 4*idle),
		MaxIdleConnsPerHost:    idle,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
	}
	return &Client{maxRead: cfg.MaxRead, http: &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Response is what came back: the status, the headers and at most MaxRead
// bytes of the body (Truncated when there was more).
type Response struct {
	Status    int
	Header    http.Header
	Body      []byte
	Truncated bool
}

// Do sends req (http or https only) and reads the answer within the limits;
// a redirect is answered as it is (its 3xx status), never followed.
func (c *Client) Do(ctx context.Context, req *http.Request) (Response, error) {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return Response{}, fmt.Errorf("%w: scheme %q", ErrRefused, req.URL.Scheme)
	}
	resp, err := c.http.Do(req.WithContext(ctx))
	if err != nil {
		return Response{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxRead+1))
	out := Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if int64(len(body)) > c.maxRead {
		out.Body, out.Truncated = body[:c.maxRead], true
	}
	if err != nil {
		return out, fmt.Errorf("read answer: %w", err)
	}
	return out, nil
}

// Describe is err in words fit to show the endpoint's owner: what failed,
// never how this side's network is laid out (a resolver's address, a dialled
// address, a proxy's name).
func Describe(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrRefused):
		return "address not allowed"
	case errors.As(err, &dns):
		if dns.IsTimeout {
			return "could not resolve the host (timed out)"
		}
		return "could not resolve the host"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), isTimeout(err):
		return "timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection closed before an answer"
	case strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:"):
		return "TLS handshake failed"
	case errors.As(err, &op):
		return "could not connect"
	}
	return "request failed"
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
