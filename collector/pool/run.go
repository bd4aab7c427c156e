package pool

import (
	"context"
	"math"
	"sync/atomic"
	"time"
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
	next := int64(0)
	for _, d := range []*dueTime{&p.readmitDue, &p.maint.due, &p.outliers.due} {
		if at := d.at.Load(); at != 0 && (next == 0 || at < next) {
			next = at
		}
	}
	if next != 0 {
		timer.Reset(time.Duration(next - p.now().UnixNano()))
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

// dueTime is when one kind of timed work is next due, as Unix
// nanoseconds, 0 when none is.
type dueTime struct{ at atomic.Int64 }

// reached reports whether the work is due at now.
func (d *dueTime) reached(now time.Time) bool {
	at := d.at.Load()
	return at != 0 && now.UnixNano() >= at
}

// set makes t the due time, none when t is zero.
func (d *dueTime) set(t time.Time) {
	if t.IsZero() {
		d.at.Store(0)
		return
	}
	d.at.Store(dueNanos(t))
}

// lower makes t the due time when none is set or t is earlier, and
// reports whether it did.
func (d *dueTime) lower(t time.Time) bool {
	at := dueNanos(t)
	for {
		current := d.at.Load()
		if current != 0 && current <= at {
			return false
		}
		if d.at.CompareAndSwap(current, at) {
			return true
		}
	}
}

// dueNanos is t in Unix nanoseconds for a due time, saturated at the
// largest int64. time.Time.UnixNano is undefined past the year 2262, and a
// due time that wrapped negative would be past at once, for ever: the
// timer loop would spin. A due time that far off is never reached. A time
// before 1970 is 1, due at once: 0 means no due time at all.
func dueNanos(t time.Time) int64 {
	switch {
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	case t.UnixNano() < 1:
		return 1
	}
	return t.UnixNano()
}
