package status

import (
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/go-kit/log"
	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/history"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/internal/testconfig"
)

// TestPageCopiesOnlyTheShownHistories: a page of /status copies the
// probe histories of the rows it shows, not the whole pool's: over a
// pool with 2,000 more backends, each with a full history, the same page
// allocates far less more than one copy of those backends' histories.
func TestPageCopiesOnlyTheShownHistories(t *testing.T) {
	const small, large = 1000, 3000
	smallCost, largeCost := pageAllocation(t, small), pageAllocation(t, large)
	addedHistories := uint64((large - small) * history.ProbeLength * int(unsafe.Sizeof(history.Probe{})))
	t.Logf("a page over %d backends allocated %d bytes, over %d %d", small, smallCost, large, largeCost)
	if grown := largeCost - smallCost; grown > addedHistories/2 {
		t.Errorf("a page over %d backends allocated %d bytes, over %d %d: %d more, and their added histories are %d: the page copies more than its rows' histories",
			small, smallCost, large, largeCost, grown, addedHistories)
	}
}

// pageAllocation is what one request of /status allocates over a pool of
// n backends, each with a full probe history.
func pageAllocation(t *testing.T, n int) uint64 {
	t.Helper()
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	targets := make([]pool.Target, n)
	for i := range targets {
		targets[i] = pool.Target{Name: fmt.Sprintf("b%04d", i), URL: fmt.Sprintf("http://127.0.0.1:%d", 20000+i),
			Probe: testconfig.Probe(), ClientConfig: commoncfg.DefaultHTTPClientConfig}
	}
	p := pool.New(log.NewNopLogger(), func() time.Time { return now })
	if err := p.Apply(targets, pool.Settings{}); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Backends() {
		for i := range history.ProbeLength {
			r := health.StatusResult(200)
			r.Time = now.Add(time.Duration(i-history.ProbeLength) * time.Second)
			b.RecordProbe(r)
		}
	}
	h := Handler(Options{Pool: p, Started: now})
	get(t, h, "/status?refresh=0") // what is built once is built
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec := get(t, h, "/status?refresh=0")
	runtime.ReadMemStats(&after)
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	return after.TotalAlloc - before.TotalAlloc
}
