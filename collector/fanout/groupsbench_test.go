package fanout

import (
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/probegate/probegate/config"
)

// stallingBackend is a loopback backend answering a one-element JSON
// array in benchFast, and every every-th request after benchStall (or
// nothing once cancelled); it counts the requests it gets in requests.
func stallingBackend(b *testing.B, every int64, requests *atomic.Int64) string {
	b.Helper()
	var n atomic.Int64
	return delayedBackend(b, func() time.Duration {
		requests.Add(1)
		if every > 0 && n.Add(1)%every == 0 {
			return benchStall
		}
		return benchFast
	})
}

// BenchmarkFanoutReplicaGroups measures, in the same run, four groups of
// two loopback replicas answering in about 5ms, replica a of each
// stalling one answer in twenty for 2s: the fan-out without groups
// (every replica asked, 8 backend requests a query, waiting for every
// stall), with groups and no hedge, and with groups and hedging (after:
// auto, max_percent 10; budget: at most 4.6 backend requests a query and
// p99 at most 100ms). It reports the backend requests per query and p50
// and p99 of each.
func BenchmarkFanoutReplicaGroups(b *testing.B) {
	var requests atomic.Int64
	urls := make([]string, 8)
	for i := range urls {
		every := int64(0)
		if i%2 == 0 {
			every = 20
		}
		urls[i] = stallingBackend(b, every, &requests)
	}
	grouped := func(cfg *config.Config) {
		for i := range cfg.Backends {
			cfg.Backends[i].Group = fmt.Sprintf("s%d", i/2+1)
		}
	}
	hedged := func(cfg *config.Config) {
		grouped(cfg)
		cfg.Fanout.Hedge = config.DefaultHedge()
		cfg.Fanout.Hedge.Enabled = true
	}
	cases := []struct {
		name       string
		tune       func(*config.Config)
		whole      string
		warmup     int
		rounds     int
		concurrent int
	}{
		// Rounds that wait for stalls run ten at a time; the hedged ones
		// one after the other, as latency is best measured, after the
		// 20 answers a group automatic hedging waits for.
		{"no-groups", func(*config.Config) {}, "8/8", 0, 100, 10},
		{"groups", grouped, "4/4", 0, 100, 10},
		{"groups-hedged", hedged, "4/4", 40, 300, 1},
	}
	path := Path + "/query?q=1"
	for b.Loop() {
		for _, c := range cases {
			s := httptest.NewServer(fanoutTuned(b, urls, c.tune))
			if c.warmup > 0 {
				timeRounds(b, s.URL+path, c.whole, c.warmup, 8)
			}
			before := requests.Load()
			took := timeRounds(b, s.URL+path, c.whole, c.rounds, c.concurrent)
			perQuery := float64(requests.Load()-before) / float64(c.rounds)
			s.Close()
			p50, p99 := quantile(took, 0.5), quantile(took, 0.99)
			b.ReportMetric(perQuery, c.name+"-requests/query")
			b.ReportMetric(p50.Seconds()*1e3, c.name+"-p50-ms")
			b.ReportMetric(p99.Seconds()*1e3, c.name+"-p99-ms")
			b.Logf("%s: %d rounds, %.2f backend requests a query, p50 %v, p99 %v, max %v", c.name, c.rounds, perQuery,
				p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), quantile(took, 1).Round(100*time.Microsecond))
			if c.name == "groups-hedged" && (perQuery > 4.6 || p99 > 100*time.Millisecond) {
				b.Errorf("groups with hedging: %.2f backend requests a query, p99 %v; budget 4.6 and 100ms", perQuery, p99)
			}
		}
	}
}
