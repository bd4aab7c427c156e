package httpclient

import (
	"context"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// connTracker dials for the clients' transports and remembers each open
// connection under the address it was dialled to, so that the connections
// of a host no backend uses any more can be closed without touching the
// shared pool's other connections (net/http can only close all idle ones),
// and so that a host's surplus idle connections can be closed while its
// most recently used one stays (see surplus.go).
type connTracker struct {
	dialer net.Dialer
	// now is the clock the idle times of connections are read from.
	now func() time.Time

	mu     sync.Mutex
	byAddr map[string]map[*trackedConn]struct{}
}

func newConnTracker(now func() time.Time) *connTracker {
	return &connTracker{now: now, byAddr: map[string]map[*trackedConn]struct{}{}}
}

// connPool names the connections one transport dialled: net/http pools
// each transport's connections apart, so only connections of the same
// transport to the same address can stand in for each other.
type connPool struct {
	tracker *connTracker
}

func (t *connTracker) newPool() *connPool { return &connPool{tracker: t} }

// DialContext dials like net.Dialer and tracks the connection until it is
// closed.
func (p *connPool) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	t := p.tracker
	conn, err := t.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	// A new connection is held until a request takes it: until then
	// net/http may still be shaking hands on it (TLS, a proxy's CONNECT),
	// and a connection nothing ever reports taking (a token request's,
	// one net/http pooled without handing it out) is never closed here.
	tc := &trackedConn{Conn: conn, pool: p, addr: addr, holds: 1, fresh: true}
	t.mu.Lock()
	conns := t.byAddr[addr]
	if conns == nil {
		conns = map[*trackedConn]struct{}{}
		t.byAddr[addr] = conns
	}
	conns[tc] = struct{}{}
	t.mu.Unlock()
	return tc, nil
}

func (t *connTracker) forget(tc *trackedConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	conns := t.byAddr[tc.addr]
	delete(conns, tc)
	if len(conns) == 0 {
		delete(t.byAddr, tc.addr)
	}
}

func (t *connTracker) closeAddr(addr string) {
	t.mu.Lock()
	conns := make([]*trackedConn, 0, len(t.byAddr[addr]))
	for tc := range t.byAddr[addr] {
		conns = append(conns, tc)
	}
	t.mu.Unlock()
	for _, tc := range conns {
		tc.Close()
	}
}

// trackedConn forgets itself in its tracker when closed.
type trackedConn struct {
	net.Conn
	pool *connPool
	addr string
	once sync.Once

	// holds, fresh and idleSince are guarded by the tracker's mutex.
	// holds counts the requests that have the connection, plus one while
	// it is fresh (dialled, not yet taken by a request); idleSince is
	// when the last of them gave it back.
	holds     int
	fresh     bool
	idleSince time.Time
	// closing is set, under the tracker's mutex, when the connection is
	// chosen to be closed as surplus; from then on nothing is written on
	// it.
	closing atomic.Bool
}

// Write refuses to write on a connection chosen to be closed, without
// writing a byte: a request that took it from the pool just before it was
// chosen then fails with nothing written, which net/http retries on
// another connection.
func (c *trackedConn) Write(p []byte) (int, error) {
	if c.closing.Load() {
		return 0, net.ErrClosed
	}
	return c.Conn.Write(p)
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.pool.tracker.forget(c) })
	return c.Conn.Close()
}

// DialAddr is the address net/http dials for a request to u: its host and
// port, the scheme's default port when it has none.
func DialAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
