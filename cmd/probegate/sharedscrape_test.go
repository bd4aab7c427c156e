package main

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// TestScrapesInFlightShareOneAnswer: scrapes in flight together that ask
// for the same encoding get one run of the metrics handler's answer,
// header and body; one that asks for another encoding gets its own run.
func TestScrapesInFlightShareOneAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var runs atomic.Int64
		h := shareScrapes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := runs.Add(1)
			<-release
			w.Header().Set("Content-Encoding", r.Header.Get("Accept-Encoding"))
			w.Header().Set("X-Run", string(rune('0'+n)))
			w.Write([]byte("families for " + r.Header.Get("Accept-Encoding")))
		}))
		encodings := []string{"gzip", "gzip", "gzip", "identity"}
		recs := make([]*httptest.ResponseRecorder, len(encodings))
		var wg sync.WaitGroup
		for i, enc := range encodings {
			recs[i] = httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/metrics", nil)
			req.Header.Set("Accept-Encoding", enc)
			wg.Go(func() { h.ServeHTTP(recs[i], req) })
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if got := runs.Load(); got != 2 {
			t.Errorf("4 scrapes in flight, 2 encodings: %d runs; want 2", got)
		}
		for i, rec := range recs {
			enc := encodings[i]
			if rec.Code != 200 || rec.Body.String() != "families for "+enc || rec.Header().Get("Content-Encoding") != enc {
				t.Errorf("scrape %d (%s): %d %q %v", i, enc, rec.Code, rec.Body.String(), rec.Header())
			}
		}
		if recs[0].Header().Get("X-Run") != recs[1].Header().Get("X-Run") || recs[1].Header().Get("X-Run") != recs[2].Header().Get("X-Run") {
			t.Error("the gzip scrapes did not share one run")
		}
	})
}

// TestScrapesInFlightShareOneAnswerWhateverTheirQuery: the metrics read
// no query, so scrapes in flight that differ only by theirs share one run.
func TestScrapesInFlightShareOneAnswerWhateverTheirQuery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var runs atomic.Int64
		h := shareScrapes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			<-release
		}))
		var wg sync.WaitGroup
		for _, query := range []string{"", "?a=1", "?a=2", "?b"} {
			wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/metrics"+query, nil)) })
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		if got := runs.Load(); got != 1 {
			t.Errorf("4 scrapes in flight with 4 queries: %d runs; want 1", got)
		}
	})
}
