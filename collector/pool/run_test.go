package pool

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// TestReadmissionDuePastYear2262IsInTheFuture: a passive_health.window
// long enough to end past 2262, where Unix nanoseconds overflow, leaves
// the readmission due in the future, before and after a readmission pass,
// so that the timer loop waits instead of firing at once for ever.
func TestReadmissionDuePastYear2262IsInTheFuture(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	p := New(nil, func() time.Time { return now })
	settings := passiveSettings()
	settings.Passive.Window = model.Duration(290 * 365 * 24 * time.Hour)
	if err := p.Apply(unprobedTargets(2), settings); err != nil {
		t.Fatal(err)
	}
	b := p.Backends()[0]
	failTraffic(p, b, 3)
	if !b.Health().Ejected {
		t.Fatal("not ejected")
	}
	if p.readmitDue.Reached(now) {
		t.Fatal("readmission due before now: the timer would fire at once")
	}
	p.readmitElapsed(now)
	if p.readmitDue.Reached(now) {
		t.Fatal("after a pass, readmission due before now")
	}
	if !b.Health().Ejected {
		t.Error("readmitted centuries early")
	}
}

// startRun runs p.Run until the test ends, and waits for it to return.
func startRun(t *testing.T, p *Pool) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}
