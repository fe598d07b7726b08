package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Balance modes of a backend (UPSTREAM_BALANCE).
const (
	// BalanceConnection pools connections to the URL's host as it resolves
	// when a connection is dialled (a Kubernetes Service's cluster IP, where
	// kube-proxy picks a pod per connection); MaxConnAge spreads them again.
	BalanceConnection = "connection"
	// BalanceDNS resolves the URL's host every ResolveEvery (a headless
	// Service: one address per ready pod) and sends each request to the
	// least busy address, with a pool per address.
	BalanceDNS = "dns"
)

// endpointSet balances each request over the addresses a name resolves to.
// fasthttp's LBClient picks the least busy client the same way, but its list
// is fixed once used, and it cannot skip an address that refuses connections
// (a pod that stopped before DNS forgot it): both matter while pods come and
// go, so the set is rebuilt on each resolve and a refused dial moves the
// request to the next address.
type endpointSet struct {
	host, port string
	newClient  func(addr string) *fasthttp.HostClient
	lookup     func(ctx context.Context, host string) ([]string, error)
	log        *slog.Logger
	name       string
	every      time.Duration

	mu        sync.Mutex // one refresh at a time
	endpoints atomic.Pointer[[]*endpoint]
	next      atomic.Uint32
	failing   bool // the last lookup failed (logged once per change)
}

type endpoint struct {
	addr   string
	client *fasthttp.HostClient
	// refused is set when a dial to addr failed; the address is skipped
	// until a later resolve lists it again.
	refused atomic.Bool
}

func (s *endpointSet) list() []*endpoint {
	if p := s.endpoints.Load(); p != nil {
		return *p
	}
	return nil
}

// Len is the number of addresses the last resolve gave.
func (s *endpointSet) Len() int { return len(s.list()) }

// refresh resolves the name again. A name that does not exist (a headless
// Service with no ready pod) empties the set; any other failure keeps the
// last answer, since a DNS hiccup must not take the backend away.
func (s *endpointSet) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := s.lookup(ctx, s.host)
	var dnsErr *net.DNSError
	if err != nil && !(errors.As(err, &dnsErr) && dnsErr.IsNotFound) {
		s.mu.Lock()
		if !s.failing {
			s.log.Warn("upstream resolve failed; keeping the last addresses", "backend", s.name, "host", s.host, "error", err)
		}
		s.failing = true
		s.mu.Unlock()
		return
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = false
	old := s.list()
	byAddr := make(map[string]*endpoint, len(old))
	for _, e := range old {
		byAddr[e.addr] = e
	}
	next := make([]*endpoint, 0, len(addrs))
	for _, a := range addrs {
		hostPort := net.JoinHostPort(a, s.port)
		e, ok := byAddr[hostPort]
		if ok {
			delete(byAddr, hostPort)
			e.refused.Store(false) // listed again: worth a new dial
		} else {
			e = &endpoint{addr: hostPort, client: s.newClient(hostPort)}
		}
		next = append(next, e)
	}
	s.endpoints.Store(&next)
	// Requests in flight on a removed address finish on their connection;
	// its idle ones go now.
	for _, e := range byAddr {
		e.client.CloseIdleConnections()
	}
	if len(byAddr) > 0 || len(next) != len(old) {
		s.log.Info("upstream addresses changed", "backend", s.name, "host", s.host, "addresses", len(next))
	}
}

// run resolves again every s.every until ctx ends.
func (s *endpointSet) run(ctx context.Context) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.refresh(ctx)
		}
	}
}

// pick returns the address with the fewest requests in flight, starting the
// scan at a rotating index so that ties (an idle set) go round-robin;
// skip is an address already tried by this request.
func (s *endpointSet) pick(skip *endpoint) *endpoint {
	list := s.list()
	n := len(list)
	if n == 0 {
		return nil
	}
	start := int(s.next.Add(1))
	var best *endpoint
	bestLoad := 0
	for i := range n {
		e := list[(start+i)%n]
		if e == skip || e.refused.Load() {
			continue
		}
		if load := e.client.PendingRequests(); best == nil || load < bestLoad {
			best, bestLoad = e, load
		}
	}
	return best
}

// errNoEndpoints is answered as 503 (upstreamError).
var errNoEndpoints = errors.New("no ready address")

// DoTimeout sends req to one address; when its dial fails (nothing was sent,
// so even a POST may go elsewhere), the address is skipped until the next
// resolve and the request goes to another one within the same deadline.
func (s *endpointSet) DoTimeout(req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var tried *endpoint
	for range 3 {
		e := s.pick(tried)
		if e == nil {
			break
		}
		err := e.client.DoDeadline(req, resp, deadline)
		if err == nil || !dialFailed(err) || time.Now().After(deadline) {
			return err
		}
		e.refused.Store(true)
		tried = e
	}
	return errNoEndpoints
}

// dialFailed reports whether err is a failure to connect (the request was
// not sent).
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.Is(err, fasthttp.ErrDialTimeout) || (errors.As(err, &op) && op.Op == "dial")
}

// lookupHost resolves host to its addresses with the process' resolver.
func lookupHost(ctx context.Context, host string) ([]string, error) {
	return net.DefaultResolver.LookupHost(ctx, host)
}
