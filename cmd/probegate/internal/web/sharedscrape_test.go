package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
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
		h := ShareScrapes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		h := ShareScrapes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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

// TestScrapesShareAnAnswerOnlyForTheSameHeaderLines: Accept-Encoding sent
// on two lines is negotiated over both, so a scrape that sends a second
// line does not share the answer of one that sends only the first.
func TestScrapesShareAnAnswerOnlyForTheSameHeaderLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := ShareScrapes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			w.Write([]byte(strings.Join(r.Header.Values("Accept-Encoding"), ",") + ";" + strings.Join(r.Header.Values("Accept"), ",")))
		}))
		lines := [][2][]string{
			{{"identity"}, {"text/plain"}},
			{{"identity", "gzip"}, {"text/plain"}},
			{{"identity"}, {"text/plain", "application/openmetrics-text"}},
		}
		recs := make([]*httptest.ResponseRecorder, len(lines))
		var wg sync.WaitGroup
		for i, l := range lines {
			recs[i] = httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/metrics", nil)
			req.Header["Accept-Encoding"], req.Header["Accept"] = l[0], l[1]
			wg.Go(func() { h.ServeHTTP(recs[i], req) })
		}
		synctest.Wait()
		close(release)
		wg.Wait()
		for i, l := range lines {
			if want := strings.Join(l[0], ",") + ";" + strings.Join(l[1], ","); recs[i].Body.String() != want {
				t.Errorf("scrape with Accept-Encoding %q, Accept %q got the answer for %q", l[0], l[1], recs[i].Body.String())
			}
		}
	})
}
