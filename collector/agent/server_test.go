package agent

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
)

// backends is a lookup over fixed snapshots of probed backends.
func backends(served map[string]health.Served) Lookup {
	return func(name string) (pool.BackendSnapshot, bool) {
		s, ok := served[name]
		return pool.BackendSnapshot{Name: name, ProbeEnabled: true, Served: s}, ok
	}
}

var testBackends = backends(map[string]health.Served{
	"up":    {Machine: health.StateHealthy},
	"down":  {Machine: health.StateUnhealthy},
	"maint": {Machine: health.StateHealthy, Overlay: health.OverlayMaintenance},
	"drain": {Machine: health.StateHealthy, Overlay: health.OverlayOutlierEjection},
	// Probed, without a verdict yet.
	"unjudged": {Machine: health.StateUnknown},
})

// pipeListener hands out the server ends of in-memory connections, whose
// deadlines follow a synctest bubble's clock.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.UnixAddr{Name: "pipe", Net: "pipe"} }

// dial is a client's end of a new connection.
func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

// serve runs a server on l until the test ends, and returns its metrics'
// registry.
func serve(t *testing.T, l net.Listener) (*Server, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	s := NewServer(testBackends, reg)
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, reg
}

// requests is how many requests the server counted with the reply.
func requests(t *testing.T, reg *prometheus.Registry, reply string) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "probegate_agent_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == reply {
				return int(m.GetCounter().GetValue())
			}
		}
	}
	t.Fatalf("no probegate_agent_requests_total series with reply %q", reply)
	return 0
}

// exchange sends input on a new loopback connection to addr and returns
// everything the server sent before it closed the connection.
func exchange(t *testing.T, addr, input string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, input); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(input, "\n") {
		// A line that does not end would wait for its deadline, which
		// TestServerBoundsTheLine measures; here the stream ends instead.
		c.(*net.TCPConn).CloseWrite()
	}
	reply, err := io.ReadAll(c)
	if err != nil && !isReset(err) {
		t.Fatalf("reading the reply to %q: %v", input, err)
	}
	return string(reply)
}

// isReset: a server that closes with bytes unread resets the connection,
// which a client may see instead of the end of the stream.
func isReset(err error) bool {
	return strings.Contains(err.Error(), "connection reset")
}

// TestServerOnLoopback: over real TCP every verdict is answered with its
// line and the connection closed, and a backend without a verdict yet and
// every refused line (an unknown name, a bad line) are closed without a
// byte, each counted by its reply.
func TestServerOnLoopback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, reg := serve(t, l)
	addr := l.Addr().String()
	for _, c := range []struct{ input, want string }{
		{"up\n", "up ready\n"},
		{"up\r\n", "up ready\n"},
		{"down\n", "down ready #unhealthy\n"},
		{"maint\n", "maint\n"},
		{"drain\n", "drain\n"},
		{"unjudged\n", ""},
		{"nobody\n", ""},
		{"\n", ""},
		{"up\ndown\n", ""},
		{"up down\n", ""},
		{"u\x00p\n", ""},
		{"\xff\xfe\xfd\n", ""},
		{strings.Repeat("u", 300) + "\n", ""},
		{"up", ""}, // the client half-closes (exchange): no line feed before the end
	} {
		if got := exchange(t, addr, c.input); got != c.want {
			t.Errorf("reply to %q = %q, want %q", c.input, got, c.want)
		}
	}
	for reply, want := range map[string]int{"up": 2, "down": 1, "maint": 1, "drain": 1, "unjudged": 1, "unknown": 1, "bad_request": 7} {
		if got := requests(t, reg, reply); got != want {
			t.Errorf("requests with reply %s: %d, want %d", reply, got, want)
		}
	}
}

// TestServerBoundsTheLine: a line that has not ended within ReadTimeout of
// the connection is closed without a reply, however it trickles, and one
// that ends in time is answered; a client that never reads the reply
// holds its connection no longer than WriteTimeout.
func TestServerBoundsTheLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newPipeListener()
		_, reg := serve(t, l)

		// Each byte comes well within a second of the last, the line's
		// end only after its time was up.
		slow := l.dial()
		for _, b := range []byte("up") {
			slow.Write([]byte{b})
			time.Sleep(ReadTimeout * 6 / 10)
		}
		if _, err := slow.Write([]byte("\n")); err == nil {
			t.Error("the line's end was read after its time was up")
		}
		if reply, _ := io.ReadAll(slow); len(reply) != 0 {
			t.Errorf("a slow line got the reply %q", reply)
		}
		slow.Close()

		silent := l.dial()
		start := time.Now()
		if reply, _ := io.ReadAll(silent); len(reply) != 0 || time.Since(start) != ReadTimeout {
			t.Errorf("a silent client got %q after %v, want nothing after %v", reply, time.Since(start), ReadTimeout)
		}
		silent.Close()

		inTime := l.dial()
		inTime.Write([]byte("u"))
		time.Sleep(ReadTimeout - time.Millisecond)
		inTime.Write([]byte("p\n"))
		if reply, _ := io.ReadAll(inTime); string(reply) != "up ready\n" {
			t.Errorf("a line that ended in time got %q", reply)
		}
		inTime.Close()

		deaf := l.dial()
		deaf.Write([]byte("up\n"))
		start = time.Now()
		time.Sleep(WriteTimeout + time.Millisecond)
		synctest.Wait()
		if _, err := deaf.Read(make([]byte, 64)); err != io.EOF {
			t.Errorf("a client that never read its reply: the connection still open after %v (%v)", time.Since(start), err)
		}
		deaf.Close()

		if got := requests(t, reg, "bad_request"); got != 2 {
			t.Errorf("bad requests: %d, want 2", got)
		}
	})
}

// TestShutdownWaitsForConnections: Shutdown stops accepting at once and
// returns once the connections in progress are done, each within its
// bounds.
func TestShutdownWaitsForConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newPipeListener()
		reg := prometheus.NewRegistry()
		s := NewServer(testBackends, reg)
		served := make(chan error, 1)
		go func() { served <- s.Serve(l) }()
		pending := l.dial()
		defer pending.Close()
		synctest.Wait()
		start := time.Now()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != ReadTimeout {
			t.Errorf("Shutdown returned after %v, want the pending line's %v", waited, ReadTimeout)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve after Shutdown: %v", err)
		}
		if err := s.Serve(newPipeListener()); err != nil {
			t.Errorf("Serve after Shutdown: %v", err)
		}
	})
}
