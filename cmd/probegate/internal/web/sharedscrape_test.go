package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
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

// TestScrapesRestAsLongAsTheirLastRunTook: a run of the metrics is
// followed by a rest as long as it took, in which no run starts, so that
// scrapers asking without pause keep them busy half the time at most; a
// scrape after the rest starts its run at once.
func TestScrapesRestAsLongAsTheirLastRunTook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const took = 300 * time.Millisecond
		var starts []time.Time
		h := ShareScrapes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			starts = append(starts, time.Now())
			time.Sleep(took)
		}))
		scrape := func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/metrics", nil)) }
		t0 := time.Now()
		scrape()
		scrape() // at once, as a scraper without pause asks again
		time.Sleep(5 * took)
		idle := time.Now()
		scrape()
		want := []time.Duration{0, 2 * took, idle.Sub(t0)}
		if len(starts) != len(want) {
			t.Fatalf("%d runs; want %d", len(starts), len(want))
		}
		for i, start := range starts {
			if got := start.Sub(t0); got != want[i] {
				t.Errorf("run %d started at %s; want %s", i, got, want[i])
			}
		}
	})
}

// TestScrapesOfEveryEncodingRunOneAtATime: scrapes in flight that ask for
// different encodings do not share an answer, but their runs are made one
// after the other, never at once.
func TestScrapesOfEveryEncodingRunOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var running, most atomic.Int64
		h := ShareScrapes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := running.Add(1)
			if n > most.Load() {
				most.Store(n)
			}
			time.Sleep(time.Second)
			running.Add(-1)
		}))
		var wg sync.WaitGroup
		for _, enc := range []string{"gzip", "identity", "zstd", "br"} {
			req := httptest.NewRequest("GET", "/metrics", nil)
			req.Header.Set("Accept-Encoding", enc)
			wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), req) })
		}
		wg.Wait()
		if got := most.Load(); got != 1 {
			t.Errorf("4 encodings in flight: %d runs at once; want 1", got)
		}
	})
}
