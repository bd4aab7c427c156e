package exporter

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	dto "github.com/prometheus/client_model/go"
)

// blockingGatherer is a gatherer that blocks until released and counts its
// gatherings.
type blockingGatherer struct {
	release chan struct{}
	calls   atomic.Int64
}

func (g *blockingGatherer) Gather() ([]*dto.MetricFamily, error) {
	g.calls.Add(1)
	<-g.release
	return []*dto.MetricFamily{{}}, nil
}

// TestSharedGathererSharesAGatheringInFlight: scrapes that arrive while a
// gathering runs get its families, and one gathering is made; a scrape
// after it makes a new one.
func TestSharedGathererSharesAGatheringInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &blockingGatherer{release: make(chan struct{})}
		shared := SharedGatherer(inner)
		results := make([][]*dto.MetricFamily, 3)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() { results[i], _ = shared.Gather() })
		}
		synctest.Wait()
		close(inner.release)
		wg.Wait()
		if got := inner.calls.Load(); got != 1 {
			t.Errorf("three scrapes in flight made %d gatherings; want 1", got)
		}
		for i, r := range results {
			if len(r) != 1 || r[0] != results[0][0] {
				t.Errorf("scrape %d got %v; want the shared families", i, r)
			}
		}
		if _, err := shared.Gather(); err != nil || inner.calls.Load() != 2 {
			t.Errorf("a later scrape: %v, %d gatherings; want a new one", err, inner.calls.Load())
		}
	})
}
