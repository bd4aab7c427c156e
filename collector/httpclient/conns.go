package httpclient

import (
	"context"
	"net"
	"net/url"
	"sync"
)

// connTracker dials for the clients' transports and remembers each open
// connection under the address it was dialled to, so that the connections
// of a host no backend uses any more can be closed without touching the
// shared pool's other connections (net/http can only close all idle ones).
type connTracker struct {
	dialer net.Dialer

	mu     sync.Mutex
	byAddr map[string]map[*trackedConn]struct{}
}

func newConnTracker() *connTracker {
	return &connTracker{byAddr: map[string]map[*trackedConn]struct{}{}}
}

// DialContext dials like net.Dialer and tracks the connection until it is
// closed.
func (t *connTracker) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := t.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: conn, tracker: t, addr: addr}
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
	tracker *connTracker
	addr    string
	once    sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.tracker.forget(c) })
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
