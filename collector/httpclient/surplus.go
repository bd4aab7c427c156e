package httpclient

import (
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"
)

// surplusIdleTimeout is how long a backend's idle connection is kept
// when the backend has another, more recently used, idle connection.
//
// Concurrent fan-out rounds dial a connection each to every backend (as
// does a probe through the Transport that finds its backend's connection
// busy with a fan-out request); kept for the transport's idle timeout,
// they left 1.2 to 1.8 connections per backend (and their goroutines and
// buffers) after fan-out rounds, and a burst of 16 concurrent rounds
// would leave 16. Most HTTP probes own a connection of their own and
// leave the pool to the fan-out, which still needs this: a backend needs
// one fan-out connection between bursts: its most recently used one stays for
// idleConnTimeout, and the others, once idle this long, close the next
// time a request to the same backend gives its connection back (a
// backend that gets no more requests keeps them for idleConnTimeout).
// HTTP/2 connections are never closed here: net/http reports no
// PutIdleConn for them, so they stay held, as one shared connection per
// backend should. Under sustained concurrent load every connection is reused within
// milliseconds and none is closed, so throughput and TIME_WAIT sockets are
// as with keeping them all; a pause of more than this long costs the next
// burst a dial per connection beyond the first.
const surplusIdleTimeout = time.Second

// tracedTransport is a pooled transport whose requests report which
// connection they take and when they give it back, through an
// httptrace.ClientTrace: net/http offers no other way to tell an idle
// connection from a busy one, and only idle ones may be closed.
type tracedTransport struct {
	*http.Transport
	pool *connPool
	// uses recycles the connUses of finished requests: a trace, its two
	// hooks and the state they share were three of the 66 allocations of
	// a probe.
	uses sync.Pool
}

// RoundTrip sends req with the trace that keeps its connection's holds.
// The trace is added innermost, on the request net/http's transport sees,
// so that it sees only that transport's connections (not, for one, an
// OAuth2 token request's).
func (t *tracedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	u, _ := t.uses.Get().(*connUse)
	if u == nil {
		u = &connUse{owner: t}
		u.gotHook, u.putHook = u.gotConn, u.putIdleConn
	}
	u.trace = httptrace.ClientTrace{GotConn: u.gotHook, PutIdleConn: u.putHook}
	// A trace of the caller's own is composed into this one, and its
	// hooks may outlive the request's end as this one sees it: such a
	// connUse is left to the garbage collector.
	u.recycle = httptrace.ContextClientTrace(req.Context()) == nil
	resp, err := t.Transport.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), &u.trace)))
	u.answered(err)
	return resp, err
}

// connUse is one request's use of a connection. net/http calls GotConn
// before the request writes anything, and PutIdleConn once the answer was
// read and the connection is back in the pool (or failed to go back, and
// is being closed). The request holds its connection until both
// PutIdleConn and RoundTrip returned: for an answer without a body
// net/http pools the connection before it hands the answer over, and a
// connection closed in between (another request taking it and failing)
// fails the request that was answered.
type connUse struct {
	trace httptrace.ClientTrace
	// owner is the transport whose request this is, and whose tracker
	// guards the fields below.
	owner *tracedTransport
	// gotHook and putHook are gotConn and putIdleConn, bound once.
	gotHook func(httptrace.GotConnInfo)
	putHook func(error)
	recycle bool

	// conn, pooled and done are guarded by the tracker's mutex.
	conn   *trackedConn
	pooled bool // PutIdleConn(nil) was called
	done   bool // RoundTrip returned
}

func (u *connUse) gotConn(info httptrace.GotConnInfo) {
	tc := trackedOf(info.Conn)
	t := u.owner.pool.tracker
	t.mu.Lock()
	defer t.mu.Unlock()
	if u.conn != nil {
		// A retry on another connection: the first one failed and is
		// closed, so it is not this request's any more.
		u.conn.holds--
	}
	u.conn, u.pooled = tc, false
	if tc == nil {
		return
	}
	if tc.fresh {
		tc.fresh = false // the dial's hold becomes this request's
	} else {
		tc.holds++
	}
}

func (u *connUse) putIdleConn(err error) {
	t := u.owner.pool.tracker
	t.mu.Lock()
	if u.conn == nil {
		t.mu.Unlock()
		return
	}
	if err != nil {
		// Not pooled: net/http closes it.
		u.conn.holds--
		u.conn = nil
		t.mu.Unlock()
		return
	}
	u.pooled = true
	surplus, released := u.releaseLocked()
	t.mu.Unlock()
	u.finish(surplus, released)
}

// answered records that RoundTrip returned. After an error the request
// keeps its hold: its connection is being closed, and one that was not
// would only stay out of reach of the surplus closing, never be closed
// under a request.
func (u *connUse) answered(err error) {
	t := u.owner.pool.tracker
	t.mu.Lock()
	u.done = true
	var surplus []*trackedConn
	released := false
	if err == nil {
		surplus, released = u.releaseLocked()
	}
	t.mu.Unlock()
	u.finish(surplus, released)
}

// finish closes the surplus connections a release chose and, once the
// request released its connection, when net/http calls none of its
// hooks any more, recycles the connUse.
func (u *connUse) finish(surplus []*trackedConn, released bool) {
	for _, c := range surplus {
		c.Close()
	}
	if released && u.recycle {
		u.conn, u.pooled, u.done = nil, false, false
		u.owner.uses.Put(u)
	}
}

// releaseLocked gives the request's connection back once it is both
// pooled and answered, and chooses the surplus connections to close now.
func (u *connUse) releaseLocked() (surplus []*trackedConn, released bool) {
	tc := u.conn
	if tc == nil || !u.pooled || !u.done {
		return nil, false
	}
	u.conn = nil
	tc.holds--
	if tc.holds > 0 {
		return nil, true
	}
	t := u.owner.pool.tracker
	now := t.now()
	tc.idleSince = now
	return t.surplusLocked(tc, now), true
}

// surplusLocked chooses the connections to close now that kept has gone
// idle and is its address's most recently used idle connection: the
// other idle connections of its pool to the same address that have been
// idle for surplusIdleTimeout. Each is marked closing before the mutex is
// released, and a request takes a connection (gotConn) under the same
// mutex before writing on it, so a chosen connection has no request on it
// and any request that takes it afterwards writes nothing, fails, and is
// retried by net/http on another connection.
func (t *connTracker) surplusLocked(kept *trackedConn, now time.Time) []*trackedConn {
	var surplus []*trackedConn
	for c := range t.byAddr[kept.addr] {
		if c == kept || c.pool != kept.pool || c.holds > 0 || c.closing.Load() || now.Sub(c.idleSince) < surplusIdleTimeout {
			continue
		}
		c.closing.Store(true)
		surplus = append(surplus, c)
	}
	return surplus
}

// trackedOf is the tracker's connection under c: c itself, or what a TLS
// connection runs over.
func trackedOf(c net.Conn) *trackedConn {
	for c != nil {
		if tc, ok := c.(*trackedConn); ok {
			return tc
		}
		inner, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		c = inner.NetConn()
	}
	return nil
}
