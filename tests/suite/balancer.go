package suite

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// balancer stands in for a Kubernetes Service in front of replicas: new TCP
// connections go round-robin to the replicas whose readiness probe last
// passed (an endpoints controller polling /readyz), and an open connection
// stays with its replica for its whole life, as with kube-proxy. It is what
// makes a rolling restart observable on one machine: a replica that fails
// readiness stops getting new connections, and its drain decides whether any
// request is lost.
type balancer struct {
	ln       net.Listener
	replicas []balancerReplica
	next     atomic.Uint64
	wg       sync.WaitGroup
	cancel   context.CancelFunc
}

type balancerReplica struct {
	addr  string // host:port of the replica's API listener
	probe string // its readiness URL
	ready *atomic.Bool
}

// readinessPeriod is how often the balancer probes each replica: kubelet's
// probe period plus the endpoints' propagation, shortened for tests.
const readinessPeriod = 100 * time.Millisecond

func newBalancer(addr string, replicas []balancerReplica) (*balancer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &balancer{ln: ln, replicas: replicas, cancel: cancel}
	for i := range b.replicas {
		b.replicas[i].ready = new(atomic.Bool)
		b.wg.Add(1)
		go b.watch(ctx, b.replicas[i])
	}
	b.wg.Add(1)
	go b.serve()
	return b, nil
}

func (b *balancer) watch(ctx context.Context, r balancerReplica) {
	defer b.wg.Done()
	client := &http.Client{Timeout: readinessPeriod * 5}
	for {
		ok := false
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.probe, nil)
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ok = resp.StatusCode == http.StatusOK
		}
		r.ready.Store(ok)
		select {
		case <-ctx.Done():
			return
		case <-time.After(readinessPeriod):
		}
	}
}

// pick returns the next ready replica, or any replica when none is ready
// (as a Service with no ready endpoint refuses; here the dial decides).
func (b *balancer) pick() string {
	n := uint64(len(b.replicas))
	start := b.next.Add(1)
	for i := uint64(0); i < n; i++ {
		if r := b.replicas[(start+i)%n]; r.ready.Load() {
			return r.addr
		}
	}
	return b.replicas[start%n].addr
}

func (b *balancer) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		go b.relay(c)
	}
}

// relay pipes one client connection to one replica; a half-close on either
// side is passed on, so a replica closing an idle keep-alive connection looks
// to the client exactly as it would without the balancer.
func (b *balancer) relay(client net.Conn) {
	defer client.Close()
	upstream, err := net.DialTimeout("tcp", b.pick(), 2*time.Second)
	if err != nil {
		return // the client sees its connection closed, as with a refused one behind a Service
	}
	defer upstream.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(upstream, client)
	go pipe(client, upstream)
	<-done
	<-done
}

func (b *balancer) Close() {
	b.cancel()
	_ = b.ln.Close()
	b.wg.Wait()
}
