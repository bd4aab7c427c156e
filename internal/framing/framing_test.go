package framing

import (
	"bufio"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// servedPaths is a handler that notes the path of every request it serves.
type servedPaths struct {
	mu    sync.Mutex
	paths []string
}

func (s *servedPaths) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.paths = append(s.paths, r.URL.Path)
	s.mu.Unlock()
}

func (s *servedPaths) served() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.paths)
}

// exchange writes raw on a new connection from dial and reads every
// answer until the connection closes or, when it stays open, 1 s passes.
func exchange(t *testing.T, dial func() (net.Conn, error), raw string) (statuses []int, closed bool) {
	t.Helper()
	c, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for range 10 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return statuses, false
			}
			return statuses, true
		}
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	return statuses, false
}

// serveWatched serves h on a loopback Listener until the test ends, and
// returns how to dial it.
func serveWatched(t *testing.T, h http.Handler) func() (net.Conn, error) {
	srv := &http.Server{Handler: h, ConnContext: ConnContext}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(Listener(l))
	t.Cleanup(func() { srv.Close() })
	return func() (net.Conn, error) { return net.Dial("tcp", l.Addr().String()) }
}

// ambiguousThenSmuggled is a request with both framing fields whose body,
// framed by its Content-Length, ends before a request for /smuggled.
const ambiguousThenSmuggled = "POST /ambiguous HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

// TestNoHeadIsServedUnwatched: whatever head stops the scan, whether
// net/http accepts it or not, no request after it on the connection is
// served, and a head with both framing fields is answered 400.
func TestNoHeadIsServedUnwatched(t *testing.T) {
	h := &servedPaths{}
	dial := serveWatched(t, Handler(h))
	for _, c := range []struct {
		name, stream string
		statuses     []int
	}{
		{"plain", ambiguousThenSmuggled, []int{400}},
		{"a long Content-Length line, then an ambiguous request",
			"POST /first HTTP/1.1\r\nHost: x\r\nContent-Length:" + strings.Repeat(" ", 300) + "1\r\n\r\na" + ambiguousThenSmuggled, []int{200}},
		{"a long Transfer-Encoding line with a Content-Length",
			"POST /ambiguous HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:" + strings.Repeat(" ", 300) + "chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", []int{400}},
		{"a folded Content-Length with a Transfer-Encoding",
			"POST /ambiguous HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", []int{400}},
		{"an HTTP/1.0 request with a Transfer-Encoding, kept alive",
			"POST /first HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" + ambiguousThenSmuggled, []int{200}},
	} {
		statuses, closed := exchange(t, dial, c.stream)
		if !slices.Equal(statuses, c.statuses) || !closed {
			t.Errorf("%s: answers %v, connection closed %v; want %v and the connection closed", c.name, statuses, closed, c.statuses)
		}
	}
	for _, p := range h.served() {
		if p != "/first" {
			t.Errorf("%s was served", p)
		}
	}
	// Requests framed by Content-Length alone keep their connection.
	if statuses, closed := exchange(t, dial, "POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\naGET /first HTTP/1.1\r\nHost: x\r\n\r\n"); len(statuses) != 2 || closed {
		t.Errorf("two plain requests: answers %v, connection closed %v; want two, the connection open", statuses, closed)
	}
}

// TestTLSClosesWhatItCannotWatch: over TLS, where nothing is scanned, a
// request with a Transfer-Encoding and an HTTP/1.0 request close their
// connection after their answer, so nothing after them is served; HTTP/1.1
// requests framed by Content-Length keep it.
func TestTLSClosesWhatItCannotWatch(t *testing.T) {
	h := &servedPaths{}
	ts := httptest.NewUnstartedServer(Handler(h))
	ts.Listener = Listener(ts.Listener)
	ts.Config.ConnContext = ConnContext
	ts.StartTLS()
	t.Cleanup(ts.Close)
	dial := func() (net.Conn, error) {
		return tls.Dial("tcp", ts.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true})
	}
	for _, stream := range []string{
		ambiguousThenSmuggled,
		"POST /first HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		if statuses, closed := exchange(t, dial, stream); len(statuses) != 1 || !closed {
			t.Errorf("%q: answers %v, connection closed %v; want one and the connection closed", stream, statuses, closed)
		}
	}
	if slices.Contains(h.served(), "/smuggled") {
		t.Errorf("served %v; the request after one that cannot be watched was served", h.served())
	}
	if statuses, closed := exchange(t, dial, "GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /first HTTP/1.1\r\nHost: x\r\n\r\n"); len(statuses) != 2 || closed {
		t.Errorf("two plain requests over TLS: answers %v, connection closed %v; want two, the connection open", statuses, closed)
	}
}

// TestNothingAfterAnAmbiguousHeadReachesTheServer: a handler in front of
// Handler (exporter-toolkit's basic auth) may answer a request with both
// framing fields itself, keeping the connection open; the request
// smuggled after it is still never read.
func TestNothingAfterAnAmbiguousHeadReachesTheServer(t *testing.T) {
	h := &servedPaths{}
	guarded := Handler(h)
	dial := serveWatched(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		guarded.ServeHTTP(w, r)
	}))
	smuggling := "POST /ambiguous HTTP/1.1\r\nHost: x\r\nContent-Length: 54\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\nAuthorization: x\r\n\r\n"
	statuses, closed := exchange(t, dial, smuggling)
	if len(statuses) != 1 || statuses[0] != http.StatusUnauthorized || !closed {
		t.Errorf("answers %v, connection closed %v; want one 401 and the connection closed", statuses, closed)
	}
	if served := h.served(); len(served) != 0 {
		t.Errorf("served %v after a head with both framing fields", served)
	}
}
