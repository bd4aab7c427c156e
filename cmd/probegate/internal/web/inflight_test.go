package web

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestHeavyPagesServeALimitedNumberAtOnce: with the limit's worth of
// reads of a heavy page in flight, one more read of it is answered 503
// with Retry-After and counted; other heavy pages, light pages and writes
// are still served.
func TestHeavyPagesServeALimitedNumberAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 2
		entered, release := make(chan struct{}, limit), make(chan struct{})
		slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/status" && r.Method == http.MethodGet {
				select {
				case entered <- struct{}{}:
				default: // Beyond the limit: the limiter let it through.
				}
				select {
				case <-release:
				case <-time.After(5 * time.Second):
				}
			}
			w.WriteHeader(http.StatusOK)
		})
		rejected := NewRejectedCounter(prometheus.NewRegistry())
		h := LimitInFlight(slow, limit, PageWriteTimeout, rejected)
		serve := func(method, path string) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			return rec
		}
		var wg sync.WaitGroup
		for range limit {
			wg.Go(func() { serve("GET", "/status") })
			<-entered
		}
		rec := serve("GET", "/status")
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
			t.Errorf("read beyond the limit: %d, Retry-After %q; want 503, 1", rec.Code, rec.Header().Get("Retry-After"))
		}
		if got := testutil.ToFloat64(rejected.WithLabelValues("status")); got != 1 {
			t.Errorf("probegate_http_requests_rejected_total{handler=\"status\"} = %v; want 1", got)
		}
		for _, c := range []struct{ method, path string }{
			{"GET", "/healthz"}, {"GET", "/api/v1/discovery"}, {"GET", "/ready"}, {"POST", "/status"},
		} {
			if rec := serve(c.method, c.path); rec.Code != http.StatusOK {
				t.Errorf("%s %s while /status is full: %d; want 200", c.method, c.path, rec.Code)
			}
		}
		close(release)
		wg.Wait()
		if rec := serve("GET", "/healthz"); rec.Code != http.StatusOK {
			t.Errorf("after the reads ended: %d; want 200", rec.Code)
		}
	})
}

// TestARefusedConnectionWaitsItsRetryAfter: a read refused for a full
// heavy page has its whole 503 at once, its length declared, but its
// connection is not read again until the Retry-After has passed, or the
// client has gone: a client that asks again at once cannot spin on
// refusals.
func TestARefusedConnectionWaitsItsRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := LimitInFlight(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }),
			1, PageWriteTimeout, NewRejectedCounter(prometheus.NewRegistry()))
		var held sync.WaitGroup
		held.Go(func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/status", nil)) })
		synctest.Wait()

		rec := httptest.NewRecorder()
		var done atomic.Bool
		var refused sync.WaitGroup
		refused.Go(func() {
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/status", nil))
			done.Store(true)
		})
		synctest.Wait()
		if done.Load() {
			t.Error("the refused read's connection was free to ask again at once")
		}
		if !rec.Flushed || rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" ||
			rec.Header().Get("Content-Length") != strconv.Itoa(rec.Body.Len()) {
			t.Errorf("the refusal before the wait: flushed %v, %d, Retry-After %q, Content-Length %q of %d bytes; want it whole: 503, 1",
				rec.Flushed, rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("Content-Length"), rec.Body.Len())
		}
		time.Sleep(time.Second - time.Nanosecond)
		synctest.Wait()
		if done.Load() {
			t.Error("the refused read's connection asked again before its Retry-After")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !done.Load() {
			t.Error("the refused read's connection still waits after its Retry-After")
		}
		refused.Wait()

		// A client that goes away is not waited for.
		ctx, cancel := context.WithCancel(t.Context())
		refused.Go(func() {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, "GET", "/status", nil))
		})
		synctest.Wait()
		cancel()
		refused.Wait()
		close(release)
		held.Wait()
	})
}

// TestHeavyPage: which paths share which bound.
func TestHeavyPage(t *testing.T) {
	for path, want := range map[string]string{
		"/healthz": "healthz", "/status": "status", "/status/discovery": "status", "/statusx": "",
		"/api/v1/backends": "api", "/api/v1/status/config": "api", "/api/v1": "", "/ready": "", "/fanout/api/v1/x": "",
	} {
		if got := heavyPage(path); got != want {
			t.Errorf("heavyPage(%q) = %q; want %q", path, got, want)
		}
	}
}

// TestAHeavyPageIsWrittenWithinItsTimeout: a client that asks for a heavy
// page and never reads its answer holds its slot no longer than the write
// timeout, after which the page is served again; and the deadline does
// not outlive its answer on a kept-alive connection. The kernel measures
// the deadline on the real clock, so the test waits on it.
func TestAHeavyPageIsWrittenWithinItsTimeout(t *testing.T) {
	const writeTimeout = 200 * time.Millisecond
	chunk := make([]byte, 64<<10)
	big := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/status" {
			io.WriteString(w, "light")
			return
		}
		for range 256 { // 16 MiB: more than loopback's socket buffers hold.
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	ts := httptest.NewServer(LimitInFlight(big, 1, writeTimeout, NewRejectedCounter(prometheus.NewRegistry())))
	t.Cleanup(ts.Close)
	stuck, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if _, err := stuck.Write([]byte("GET /status HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	status := func() int {
		resp, err := ts.Client().Get(ts.URL + "/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	served := false
	for deadline := time.Now().Add(5 * time.Second); !served && time.Now().Before(deadline); {
		served = status() == http.StatusOK
		if !served {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !served {
		t.Fatal("a client that does not read its answer still holds the only slot after 5s")
	}

	// A kept-alive connection serves a light page after the heavy page's
	// deadline has passed.
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for i, page := range []struct {
		path string
		size int64
	}{{"/status", 256 * int64(len(chunk))}, {"/ready", int64(len("light"))}} {
		if i > 0 {
			time.Sleep(2 * writeTimeout)
		}
		if _, err := c.Write([]byte("GET " + page.path + " HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s after %d requests on one connection: %v", page.path, i, err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != page.size {
			t.Fatalf("%s after %d requests on one connection: read %d bytes, %v; want %d", page.path, i, n, err, page.size)
		}
	}
}

// TestMetricsAnswerReadsOnly: with the metrics' bound full, a POST is
// not served past it but answered 405 naming GET and HEAD.
func TestMetricsAnswerReadsOnly(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var runs sync.WaitGroup
	served := 0
	h := LimitMetrics(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			close(entered)
			<-release
			return
		}
		served++
	}), 1, PageWriteTimeout, NewRejectedCounter(prometheus.NewRegistry()))
	runs.Go(func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/metrics", nil)) })
	<-entered
	for _, method := range []string{"POST", "PUT", "DELETE"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/metrics", nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /metrics with the bound full: %d, Allow %q; want 405, GET, HEAD", method, rec.Code, rec.Header().Get("Allow"))
		}
	}
	close(release)
	runs.Wait()
	if served != 0 {
		t.Errorf("the metrics handler served %d writes", served)
	}
}
