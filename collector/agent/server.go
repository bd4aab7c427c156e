package agent

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/pool"
)

// ReadTimeout bounds the wait for a request line, and WriteTimeout the
// writing of the reply: a client that trickles its line or never reads
// the reply holds its connection no longer than that. HAProxy sends its
// line at once and reads the reply at once.
const (
	ReadTimeout  = time.Second
	WriteTimeout = time.Second
)

// Lookup finds a backend by its name: a copy of its state, and false when
// no backend has the name (pool.Pool.SnapshotOf).
type Lookup func(name string) (pool.BackendSnapshot, bool)

// Server serves the agent protocol on listeners: one request line, one
// reply line, and the connection closed, on a goroutine per connection.
// The number of connections at once is the listener's to bound
// (netutil.LimitListener): each holds a goroutine for at most ReadTimeout
// and WriteTimeout.
type Server struct {
	lookup  Lookup
	metrics *metrics

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	closed    bool
	conns     sync.WaitGroup
}

// NewServer is a server whose verdicts lookup finds, counting its
// requests on reg.
func NewServer(lookup Lookup, reg prometheus.Registerer) *Server {
	return &Server{lookup: lookup, metrics: newMetrics(reg), listeners: map[net.Listener]struct{}{}}
}

// acceptRetryMax is the longest pause after a failed accept: a process
// out of descriptors (EMFILE) gets one back once a connection closes, so
// the server pauses rather than stops, as net/http's does.
const acceptRetryMax = time.Second

// Serve accepts connections on l and serves each until Shutdown closes
// l; it returns nil then, and the listener's error when it fails
// otherwise.
func (s *Server) Serve(l net.Listener) error {
	if !s.track(l) {
		l.Close()
		return nil
	}
	defer s.untrack(l)
	var pause time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if s.shuttingDown() {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			pause = min(max(2*pause, 5*time.Millisecond), acceptRetryMax)
			time.Sleep(pause)
			continue
		}
		pause = 0
		if !s.admit() {
			c.Close()
			return nil
		}
		go func() {
			defer s.conns.Done()
			s.serveConn(c)
		}()
	}
}

// admit counts a connection in, unless Shutdown has begun: it is counted
// under the lock Shutdown sets closed under, so that Shutdown's wait never
// begins before a connection it must wait for is counted.
func (s *Server) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns.Add(1)
	return true
}

// serveConn answers the one request of c, or closes it without a reply.
func (s *Server) serveConn(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(ReadTimeout))
	name, err := readName(c)
	if err != nil {
		s.metrics.badRequests.Inc()
		return
	}
	b, ok := s.lookup(name)
	if !ok {
		s.metrics.unknown.Inc()
		return
	}
	reply := ReplyFor(b)
	s.metrics.verdicts[reply.Verdict].Inc()
	if reply.Line == "" {
		return
	}
	c.SetWriteDeadline(time.Now().Add(WriteTimeout))
	c.Write([]byte(reply.Line))
}

// track adds l to the listeners Shutdown closes; false once it has.
func (s *Server) track(l net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.listeners[l] = struct{}{}
	return true
}

func (s *Server) untrack(l net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.listeners, l)
}

func (s *Server) shuttingDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Shutdown closes the listeners, so that no new connection is accepted,
// and waits until every connection in progress has been answered or
// closed, or ctx ends: each takes at most ReadTimeout and WriteTimeout,
// so the wait is short.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
