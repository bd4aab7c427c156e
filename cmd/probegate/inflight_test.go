package main

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestHeavyPagesServeALimitedNumberAtOnce: with the limit's worth of
// reads of a heavy page in flight, one more read of it is answered 503
// with Retry-After at once and counted; other heavy pages, light pages
// and writes are still served.
func TestHeavyPagesServeALimitedNumberAtOnce(t *testing.T) {
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
	rejected := newRejectedCounter(prometheus.NewRegistry())
	h := limitInFlight(slow, limit, rejected)
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
