package probe

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hostileServer is a raw TCP backend on loopback that follows a script
// instead of speaking HTTP, for backends that misbehave in ways no
// net/http server can be made to.
type hostileServer struct {
	// URL is the server's base URL, http://127.0.0.1:port (https:// over
	// TLS).
	URL string
	// Conns counts the connections accepted, Requests the request heads
	// scripts read, Ended the connections whose script returned, Unasked
	// the answers scripts sent on a connection held idle; ended is
	// notified at each end and each unasked answer.
	Conns, Requests, Ended, Unasked atomic.Int64
	ended                           signal

	// idle is closed once the client holds the connection idle (the test
	// says so between its probes); closing once Close begins.
	idle, closing         chan struct{}
	idleOnce, closingOnce sync.Once

	l     net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

// hostileConn is one connection as a script sees it.
type hostileConn struct {
	net.Conn
	br  *bufio.Reader
	srv *hostileServer
	// n is the connection's number on its server, from 1.
	n int64
}

// hostileServe serves every connection with script until the test ends;
// the connection is closed when the script returns. Close (called by the
// test's cleanup) closes the listener and every connection and waits for
// every script to return.
func hostileServe(t testing.TB, script func(c *hostileConn)) *hostileServer {
	t.Helper()
	return hostileServeTLS(t, nil, script)
}

// hostileServeTLS is hostileServe over TLS with config, or in plaintext
// when config is nil.
func hostileServeTLS(t testing.TB, config *tls.Config, script func(c *hostileConn)) *hostileServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scheme := "http://"
	if config != nil {
		l = tls.NewListener(l, config)
		scheme = "https://"
	}
	s := &hostileServer{URL: scheme + l.Addr().String(), l: l, ended: newSignal(), idle: make(chan struct{}), closing: make(chan struct{})}
	s.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n := s.Conns.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() {
				defer func() {
					c.Close()
					s.Ended.Add(1)
					s.ended.notify()
				}()
				script(&hostileConn{Conn: c, br: bufio.NewReader(c), srv: s, n: n})
			})
		}
	})
	t.Cleanup(s.Close)
	return s
}

// Close stops the server: it closes the listener and every connection and
// waits for the scripts to return.
func (s *hostileServer) Close() {
	s.closingOnce.Do(func() {
		close(s.closing)
		s.l.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
}

// Idle tells the scripts that the client holds the connection idle: it
// read the answer to its last request and has not sent the next.
func (s *hostileServer) Idle() {
	s.idleOnce.Do(func() { close(s.idle) })
}

// awaitIdle waits until the test says the client holds the connection
// idle, and reports false when the server closes first.
func (c *hostileConn) awaitIdle() bool {
	select {
	case <-c.srv.idle:
		return true
	case <-c.srv.closing:
		return false
	}
}

// readRequest reads a request head (probes have no body), so that the
// answer does not race the request: closing a socket with unread input
// sends a reset.
func (c *hostileConn) readRequest() bool {
	if _, err := http.ReadRequest(c.br); err != nil {
		return false
	}
	c.srv.Requests.Add(1)
	return true
}

// write sends s at once.
func (c *hostileConn) write(s string) bool {
	_, err := io.WriteString(c, s)
	return err == nil
}

// trickle sends s one byte every pause.
func (c *hostileConn) trickle(s string, pause time.Duration) bool {
	for i := range len(s) {
		if !c.write(s[i : i+1]) {
			return false
		}
		time.Sleep(pause)
	}
	return true
}

// repeat sends s over and over, pausing between copies, until the client
// goes away.
func (c *hostileConn) repeat(s string, pause time.Duration) {
	for c.write(s) {
		if pause > 0 {
			time.Sleep(pause)
		}
	}
}

// silence reads and discards until the client hangs up.
func (c *hostileConn) silence() {
	io.Copy(io.Discard, c.br)
}

// reset closes the connection with a TCP reset instead of a FIN.
func (c *hostileConn) reset() {
	conn := c.Conn
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	conn.(*net.TCPConn).SetLinger(0)
	conn.Close()
}

// sendUnasked sends s on a connection the client holds idle, once the
// test says it does, and tells the test it was sent. It reports false
// when the server closed first or the write failed.
func (c *hostileConn) sendUnasked(s string) bool {
	if !c.awaitIdle() || !c.write(s) {
		return false
	}
	c.srv.Unasked.Add(1)
	c.srv.ended.notify()
	return true
}

// answerEach answers every request on the connection with answer, the
// way a keep-alive server does.
func answerEach(answer string) func(*hostileConn) {
	return func(c *hostileConn) {
		for c.readRequest() && c.write(answer) {
		}
	}
}

// answerOnce reads one request, runs then, and keeps the connection
// silent until the client leaves.
func answerOnce(then func(*hostileConn) bool) func(*hostileConn) {
	return func(c *hostileConn) {
		if c.readRequest() && then(c) {
			c.silence()
		}
	}
}

// head is a response head: the status line and then the header lines
// given, each ended by CRLF, and the blank line.
func head(status string, headers ...string) string {
	var b strings.Builder
	b.WriteString(status + "\r\n")
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// listenRaw serves every connection of a raw loopback listener
// with serve and returns its base URL.
func listenRaw(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	return hostileServe(t, func(c *hostileConn) { serve(c.Conn) }).URL
}
