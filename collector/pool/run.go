package pool

import (
	"context"
	"time"

	"github.com/probegate/probegate/collector/pool/internal/due"
)

// This file is the pool's timed work: passive health readmitting a
// backend no probe can bring back, maintenances ending at their until,
// outlier ejections ending once served. Each has a due time. Every read
// of the pool (a selection, a budget, a snapshot) does whatever is due
// first, at the cost of an atomic load each when nothing is; Run does it
// on time when no read comes. One timer serves every backend.

// Run does the pool's timed work until ctx is done, also when nothing
// reads the pool. It sleeps until the earliest due time; a change that
// moves one (an ejection, a maintenance entry, a reload) wakes it.
func (p *Pool) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for !p.wait(ctx, timer) {
		p.catchUp(p.now())
	}
}

// wait waits for the earliest due time (a due time already past fires at
// once), a wake-up, or the end of ctx, and reports the end of ctx. The
// due times are loaded afresh each time, so a wake-up only has to say
// that one moved.
func (p *Pool) wait(ctx context.Context, timer *time.Timer) (done bool) {
	var fired <-chan time.Time
	if next, ok := due.Earliest(&p.readmitDue, &p.maint.due, &p.outliers.due); ok {
		timer.Reset(next.Sub(p.now()))
		fired = timer.C
	} else {
		timer.Stop()
	}
	select {
	case <-ctx.Done():
		return true
	case <-p.wake:
	case <-fired:
	}
	return false
}

// catchUp does the timed work due at now. Each part costs one atomic
// load until it is due.
func (p *Pool) catchUp(now time.Time) {
	p.readmitElapsed(now)
	p.expireMaintenance(now)
	p.readmitOutliers(now)
}

// wakeRun tells Run that a due time moved. It never blocks: a signal
// already pending wakes Run just as well.
func (p *Pool) wakeRun() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}
