package fanout

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/probegate/probegate/config"
)

// The stall and the speed of the straggler benchmark's backends: four
// answer in about 5ms, one takes 2s.
const (
	benchFast  = 5 * time.Millisecond
	benchStall = 2 * time.Second
)

// sleepyBackend is a loopback backend answering a one-element JSON array
// after delay, or nothing once the request is cancelled.
func sleepyBackend(b *testing.B, delay time.Duration) string {
	b.Helper()
	return delayedBackend(b, func() time.Duration { return delay })
}

// delayedBackend is a loopback backend answering a one-element JSON array
// after the delay delay gives each request, or nothing once the request
// is cancelled.
func delayedBackend(b *testing.B, delay func() time.Duration) string {
	b.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay()):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "[1]")
	}))
	b.Cleanup(s.Close)
	return s.URL
}

// timeRounds sends rounds GET requests to url, concurrency at a time, and
// returns how long each took. Every answer must be a 200 with the given
// X-Backends ("" for any).
func timeRounds(b *testing.B, url, wantBackends string, rounds, concurrency int) []time.Duration {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	defer client.CloseIdleConnections()
	took := make([]time.Duration, rounds)
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failure string
	for range concurrency {
		wg.Go(func() {
			for i := range work {
				start := time.Now()
				resp, err := client.Get(url)
				if err != nil {
					mu.Lock()
					failure = err.Error()
					mu.Unlock()
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				took[i] = time.Since(start)
				if got := resp.Header.Get("X-Backends"); resp.StatusCode != http.StatusOK || wantBackends != "" && got != wantBackends {
					mu.Lock()
					failure = resp.Status + ", X-Backends " + got
					mu.Unlock()
				}
			}
		})
	}
	for i := range rounds {
		work <- i
	}
	close(work)
	wg.Wait()
	if failure != "" {
		b.Fatalf("GET %s: %s; want 200 with X-Backends %q", url, failure, wantBackends)
	}
	return took
}

// BenchmarkFanoutStragglers measures round latency against four loopback
// backends answering in about 5ms and one stalled for 2s: probegate with
// fanout.stragglers on (budget: p99 at most min_wait or three times 5ms,
// whichever is more, plus 20ms), probegate with it off, and the minimal
// net/http fan-out, which waits for everybody, in the same run. Outlier
// detection is off, so that it does not eject the stalled backend midway.
func BenchmarkFanoutStragglers(b *testing.B) {
	urls := []string{sleepyBackend(b, benchFast), sleepyBackend(b, benchFast), sleepyBackend(b, benchStall), sleepyBackend(b, benchFast), sleepyBackend(b, benchFast)}
	cut := httptest.NewServer(fanoutTuned(b, urls, func(cfg *config.Config) { cfg.Fanout.Stragglers.Enabled = true }))
	b.Cleanup(cut.Close)
	waiting := httptest.NewServer(fanoutTuned(b, urls, func(*config.Config) {}))
	b.Cleanup(waiting.Close)
	minimal := httptest.NewServer(minimalFanout(urls))
	b.Cleanup(minimal.Close)
	path := Path + "/query?q=1"
	stragglers := config.DefaultStragglers()
	budget := max(time.Duration(stragglers.MinWait), 3*benchFast) + 20*time.Millisecond

	for b.Loop() {
		// The rounds that wait take the stall each, so they run ten at a
		// time; those that cut run one after the other, as latency is
		// best measured.
		cutTook := timeRounds(b, cut.URL+path, "4/5", 100, 1)
		waitingTook := timeRounds(b, waiting.URL+path, "5/5", 20, 10)
		minimalTook := timeRounds(b, minimal.URL+path, "", 20, 10)
		for _, c := range []struct {
			name string
			took []time.Duration
		}{{"stragglers", cutTook}, {"waiting", waitingTook}, {"minimal", minimalTook}} {
			p50, p99 := quantile(c.took, 0.5), quantile(c.took, 0.99)
			b.ReportMetric(p50.Seconds()*1e3, c.name+"-p50-ms")
			b.ReportMetric(p99.Seconds()*1e3, c.name+"-p99-ms")
			b.Logf("%s: %d rounds, p50 %v, p99 %v, max %v", c.name, len(c.took), p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), quantile(c.took, 1).Round(100*time.Microsecond))
		}
		if p99 := quantile(cutTook, 0.99); p99 > budget {
			b.Errorf("p99 %v with stragglers cut; budget %v", p99, budget)
		}
	}
}

// quantile is the q-quantile of durations.
func quantile(d []time.Duration, q float64) time.Duration {
	sorted := slices.Sorted(slices.Values(d))
	return sorted[int(float64(len(sorted)-1)*q)]
}
