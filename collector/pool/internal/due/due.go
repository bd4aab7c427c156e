// Package due is a time when some timed work is next due, kept in one
// atomic word so that a reader that finds nothing due pays one load and
// takes no lock. The pool keeps one for each kind of its timed work
// (passive readmission, maintenance expiry, outlier readmission) and
// sleeps until the earliest.
//
// It reads no clock: the time now is a parameter.
package due

import (
	"math"
	"sync/atomic"
	"time"
)

// Time is when one kind of timed work is next due, none in its zero value.
// It is safe for concurrent use.
type Time struct {
	// at is the due time in Unix nanoseconds, 0 when none is set.
	at atomic.Int64
}

// Reached reports whether the work is due at now.
func (d *Time) Reached(now time.Time) bool {
	at := d.at.Load()
	return at != 0 && now.UnixNano() >= at
}

// Set makes t the due time, none when t is zero.
func (d *Time) Set(t time.Time) {
	if t.IsZero() {
		d.at.Store(0)
		return
	}
	d.at.Store(nanos(t))
}

// Lower makes t the due time when none is set or t is earlier, and
// reports whether it did.
func (d *Time) Lower(t time.Time) bool {
	at := nanos(t)
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

// MarkDue makes a due time that is set due at once, so that the next look
// at it does the work, and reports whether one was set; one that is not
// stays unset.
func (d *Time) MarkDue() bool {
	for {
		current := d.at.Load()
		if current == 0 {
			return false
		}
		if d.at.CompareAndSwap(current, 1) {
			return true
		}
	}
}

// Earliest is the earliest of the due times that are set, and false when
// none is.
func Earliest(times ...*Time) (at time.Time, ok bool) {
	next := int64(0)
	for _, d := range times {
		if a := d.at.Load(); a != 0 && (next == 0 || a < next) {
			next = a
		}
	}
	if next == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, next), true
}

// nanos is t in Unix nanoseconds for a due time, saturated at the largest
// int64. time.Time.UnixNano is undefined past the year 2262, and a due
// time that wrapped negative would be past at once, for ever: a timer loop
// over it would spin. A due time that far off is never reached. A time
// before 1970 is 1, due at once: 0 means no due time at all.
func nanos(t time.Time) int64 {
	switch {
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	case t.UnixNano() < 1:
		return 1
	}
	return t.UnixNano()
}
