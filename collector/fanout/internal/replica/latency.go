package replica

import (
	"math"
	"time"
)

// HalfLife is how long it takes a replica's recent latency to forget half
// of what it was: after a few seconds without answers, the next answer is
// most of it.
const HalfLife = 2 * time.Second

// Latency is a replica's recent latency: an exponentially weighted moving
// average of its answers' latencies whose weights are kept by time, not by
// count, so that it forgets within seconds whatever the replica's traffic.
// An answer weighs what the time since the previous one is worth (half
// the average after HalfLife), so a burst of answers at one instant counts
// as one moment of the replica's life, not as many.
//
// Its zero value has measured nothing. It is not safe for concurrent use:
// the replica's owner guards it.
type Latency struct {
	// average is in nanoseconds, at least 1 once measured.
	average  float64
	measured bool
	// last is when the newest answer came.
	last time.Time
}

// Observe records an answer that came at now and took took. A took below
// one nanosecond counts as one, so that a measured latency is never 0;
// answers handed in out of order (now before the newest) count as having
// come with the newest.
func (l *Latency) Observe(now time.Time, took time.Duration) {
	sample := float64(max(took, 1))
	if !l.measured {
		l.average, l.last, l.measured = sample, now, true
		return
	}
	elapsed := now.Sub(l.last)
	if elapsed <= 0 {
		// Weighs nothing: it came with the newest, which is counted.
		return
	}
	// The weight of the new answer is 1 - 2^(-elapsed/HalfLife); Expm1
	// keeps it exact when elapsed is tiny.
	weight := -math.Expm1(-math.Ln2 * float64(elapsed) / float64(HalfLife))
	l.average += weight * (sample - l.average)
	l.last = now
}

// Value is the recent latency, 0 while nothing is measured.
func (l *Latency) Value() time.Duration {
	if !l.measured {
		return 0
	}
	return time.Duration(l.average)
}
