package httpclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/config"
)

// fakeClock is a clock the tests move by hand; with step set, every
// reading also moves it on by step.
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now
	c.now = c.now.Add(c.step)
	return now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// clockClient is the client of the default configuration from a cache on
// clock; its connections are closed when the test ends.
func clockClient(t *testing.T, clock *fakeClock) *http.Client {
	t.Helper()
	client, err := newCache(clock.Now).Client(config.HTTPClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.CloseIdleConnections)
	return client
}

// holdingServer is a watched server whose handler, while hold is set,
// blocks every request until release is closed.
type holdingServer struct {
	*watchedServer
	held    atomic.Bool
	arrived sync.WaitGroup
	release chan struct{}
}

func newHoldingServer(t *testing.T) *holdingServer {
	h := &holdingServer{}
	h.watchedServer = newWatchedServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if h.held.Load() {
			h.arrived.Done()
			<-h.release
		}
		io.WriteString(w, "answer")
	}))
	return h
}

// hold makes the next n requests wait, each on a connection of its own.
func (h *holdingServer) hold(n int) {
	h.release = make(chan struct{})
	h.arrived.Add(n)
	h.held.Store(true)
}

// unhold lets the held requests answer, once all of them arrived.
func (h *holdingServer) unhold() {
	h.arrived.Wait()
	h.held.Store(false)
	close(h.release)
}

// burst sends n overlapping requests, so that n connections are open and
// idle afterwards.
func (h *holdingServer) burst(t *testing.T, client *http.Client, n int) {
	t.Helper()
	h.hold(n)
	var done sync.WaitGroup
	for range n {
		done.Go(func() {
			if status, err := get(t, client, h.URL); err != nil || status != 200 {
				t.Errorf("got %d, %v", status, err)
			}
		})
	}
	h.unhold()
	done.Wait()
}

// TestSurplusIdleConnectionsClose: after a burst of overlapping requests,
// a backend's idle connections beyond its most recently used one close
// once they have been idle for surplusIdleTimeout, at the next request
// that gives its connection back; before that, none does, and the one
// kept serves the next request.
func TestSurplusIdleConnectionsClose(t *testing.T) {
	const overlapping = 3
	clock := newFakeClock()
	h := newHoldingServer(t)
	client := clockClient(t, clock)
	h.burst(t, client, overlapping)

	clock.advance(surplusIdleTimeout - time.Millisecond)
	if status, err := get(t, client, h.URL); err != nil || status != 200 {
		t.Fatalf("got %d, %v", status, err)
	}
	if opened, closed := h.counts(); opened != overlapping || closed != 0 {
		t.Fatalf("idle for less than %v: %d connections opened, %d closed; want %d and none", surplusIdleTimeout, opened, closed, overlapping)
	}

	clock.advance(time.Millisecond)
	if status, err := get(t, client, h.URL); err != nil || status != 200 {
		t.Fatalf("got %d, %v", status, err)
	}
	if !h.waitClosed(overlapping - 1) {
		opened, closed := h.counts()
		t.Fatalf("idle for %v: %d connections opened, %d closed; want all but one closed", surplusIdleTimeout, opened, closed)
	}
	if status, reused, err := getTraced(t, client, h.URL); err != nil || status != 200 || !reused {
		t.Errorf("the next request: %d, reused %v, %v; want it on the connection kept", status, reused, err)
	}
	if opened, closed := h.counts(); opened != overlapping || closed != overlapping-1 {
		t.Errorf("%d connections opened, %d closed; want %d and %d", opened, closed, overlapping, overlapping-1)
	}
}

// TestSurplusNeverClosesBusyConnection: a connection with a request in
// flight is not closed however long ago it was last idle, while another
// request to the same backend gives its connection back; the request in
// flight gets its answer.
func TestSurplusNeverClosesBusyConnection(t *testing.T) {
	clock := newFakeClock()
	h := newHoldingServer(t)
	client := clockClient(t, clock)
	// Two idle connections, so that the one the held request takes has
	// been used before.
	h.burst(t, client, 2)

	h.hold(1)
	type answer struct {
		status int
		err    error
	}
	inFlight := make(chan answer, 1)
	go func() {
		status, err := get(t, client, h.URL)
		inFlight <- answer{status, err}
	}()
	h.arrived.Wait()
	h.held.Store(false)

	clock.advance(10 * surplusIdleTimeout)
	if status, err := get(t, client, h.URL); err != nil || status != 200 {
		t.Fatalf("a request beside the one in flight: %d, %v", status, err)
	}
	if _, closed := h.counts(); closed != 0 {
		t.Errorf("%d connections closed while one had a request in flight and the other was just used, want none", closed)
	}
	close(h.release)
	if a := <-inFlight; a.err != nil || a.status != 200 {
		t.Errorf("the request in flight: %d, %v; want its answer", a.status, a.err)
	}
	if opened, closed := h.counts(); opened != 2 || closed != 0 {
		t.Errorf("%d connections opened, %d closed; want 2 and none", opened, closed)
	}
}

// TestSurplusClosingRacesAreRetried: with every idle connection but the
// most recent one closed as soon as a request gives its connection back,
// concurrent GET and POST requests all get their answers: a request that
// takes a connection as it is being closed writes nothing on it and
// net/http sends it again on another.
func TestSurplusClosingRacesAreRetried(t *testing.T) {
	const workers, requests = 8, 40
	clock := newFakeClock()
	clock.step = time.Hour // every connection has been idle long enough
	w := newWatchedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, r.Body)
	}))
	client := clockClient(t, clock)
	var done sync.WaitGroup
	for worker := range workers {
		done.Go(func() {
			for i := range requests {
				body := fmt.Sprintf("worker %d request %d", worker, i)
				method := http.MethodGet
				var reqBody io.Reader
				if i%2 == 1 {
					method, reqBody = http.MethodPost, bytes.NewReader([]byte(body))
				}
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				req, err := http.NewRequestWithContext(ctx, method, w.URL, reqBody)
				if err != nil {
					cancel()
					t.Error(err)
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					cancel()
					t.Errorf("%s %d of worker %d: %v", method, i, worker, err)
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				cancel()
				if want := map[bool]string{true: body, false: ""}[method == http.MethodPost]; err != nil || resp.StatusCode != 200 || string(got) != want {
					t.Errorf("%s %d of worker %d: %d %q, %v; want 200 %q", method, i, worker, resp.StatusCode, got, err, want)
				}
			}
		})
	}
	done.Wait()
	if _, closed := w.counts(); closed == 0 {
		t.Error("no connection was closed as surplus: the test raced nothing")
	} else {
		t.Logf("%d connections closed as surplus", closed)
	}
}

// TestSurplusChosenConnectionWritesNothing: once a connection is chosen to
// be closed, a write on it fails without sending a byte, which is what
// makes net/http retry a request that took it.
func TestSurplusChosenConnectionWritesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	received := make(chan int, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			received <- -1
			return
		}
		defer conn.Close()
		n, _ := io.Copy(io.Discard, conn)
		received <- int(n)
	}()
	pool := newConnTracker(time.Now).newPool()
	conn, err := pool.DialContext(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn.(*trackedConn).closing.Store(true)
	if n, err := conn.Write([]byte("GET / HTTP/1.1\r\n")); n != 0 || err == nil {
		t.Errorf("write on a connection chosen to be closed: %d bytes, %v; want 0 and an error", n, err)
	}
	conn.Close()
	if n := <-received; n != 0 {
		t.Errorf("the server received %d bytes, want none", n)
	}
}

// TestSurplusLeavesProxiedBackendsAlone checks that through a proxy one
// backend's connection is never closed as another's surplus: every
// tunnel is dialled to the proxy's address, so the tracker cannot tell
// backends apart there, and must not try.
func TestSurplusLeavesProxiedBackendsAlone(t *testing.T) {
	var connects atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusBadRequest)
			return
		}
		connects.Add(1)
		upstream, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		// The answer goes out on the hijacked connection itself, and
		// what the client sent after its CONNECT is read through the
		// server's buffer, so that no byte is lost or reordered.
		client, buffered, err := w.(http.Hijacker).Hijack()
		if err != nil {
			upstream.Close()
			return
		}
		if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			client.Close()
			upstream.Close()
			return
		}
		go func() { io.Copy(upstream, buffered); upstream.Close() }()
		go func() { io.Copy(client, upstream); client.Close() }()
	}))
	t.Cleanup(proxy.Close)
	answer := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "answer") })
	a, b := httptest.NewTLSServer(answer), httptest.NewTLSServer(answer)
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	proxyURL, err := url.Parse(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.HTTPClientConfig{}
	cfg.ProxyURL = commoncfg.URL{URL: proxyURL}
	cfg.TLSConfig.InsecureSkipVerify = true
	clock := newFakeClock()
	client, err := newCache(clock.Now).Client(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.CloseIdleConnections)
	// get sends one request and returns once its connection is back in
	// the pool, which net/http reports through the caller's own trace.
	get := func(target string) {
		t.Helper()
		pooled := make(chan struct{})
		trace := &httptrace.ClientTrace{PutIdleConn: func(error) { close(pooled) }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		select {
		case <-pooled:
		case <-time.After(5 * time.Second):
			t.Fatalf("GET %s: the connection never went back to the pool", target)
		}
	}
	get(a.URL)
	get(b.URL)
	clock.advance(2 * surplusIdleTimeout)
	get(a.URL)
	get(b.URL)
	if n := connects.Load(); n != 2 {
		t.Errorf("%d CONNECTs through the proxy, want 2: one backend's only connection was closed as another's surplus", n)
	}
}
