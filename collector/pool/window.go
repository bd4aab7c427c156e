package pool

import (
	"time"

	"github.com/probegate/probegate/config"
)

// passiveBuckets is how many time buckets the passive-health window is cut
// into. More buckets make the window's edge sharper and the ring larger; 20
// keeps the edge within 5% of the window in 160 bytes of counters.
const passiveBuckets = 20

// passiveWindow is the sliding window of one backend's fan-out outcomes that
// passive health judges (docs/design.md, "Passive health"): a fixed ring of time buckets, so
// its memory is constant, recording never allocates, and no goroutine or
// timer is needed to forget old outcomes: a bucket is emptied when time
// comes round to it again.
//
// The ring covers the buckets head-passiveBuckets+1 through head, where a
// bucket is a span of window/passiveBuckets of wall-clock time and head is
// the newest bucket seen. Between (1-1/passiveBuckets)·window and window of
// history is therefore in it at any moment. Running totals over the ring are
// kept up to date as buckets are emptied, so reading them is O(1).
//
// It is pure (time is a parameter) and not safe for concurrent use: the
// backend's mutex guards it.
type passiveWindow struct {
	// width is the span of one bucket in nanoseconds; 0 before the first
	// record. A different window empties the ring.
	width int64
	// head is the index, counted from the Unix epoch, of the newest bucket.
	head    int64
	totals  passiveCounts
	buckets [passiveBuckets]passiveCounts
}

// passiveCounts are outcomes counted in a bucket or in the whole window.
type passiveCounts struct {
	Successes uint32
	Failures  uint32
}

// Requests is the number of outcomes counted.
func (c passiveCounts) Requests() uint32 { return c.Successes + c.Failures }

// Record adds one outcome that happened at now to a window of the given
// length and returns the window's counts including it.
func (w *passiveWindow) Record(now time.Time, window time.Duration, failed bool) passiveCounts {
	bucket := &w.buckets[w.bucketFor(now, window)]
	if failed {
		bucket.Failures++
		w.totals.Failures++
	} else {
		bucket.Successes++
		w.totals.Successes++
	}
	return w.totals
}

// Counts returns the outcomes in the window that ends at now.
func (w *passiveWindow) Counts(now time.Time, window time.Duration) passiveCounts {
	w.bucketFor(now, window)
	return w.totals
}

// Reset forgets every outcome.
func (w *passiveWindow) Reset() {
	*w = passiveWindow{}
}

// bucketFor moves the window forward to now, emptying the buckets it
// passes, and returns the ring index of now's bucket. An outcome from a
// bucket still in the ring but older than head (a request that finished
// just before another one was recorded) goes to its own bucket. A window
// shorter than passiveBuckets nanoseconds is taken as one nanosecond per
// bucket.
func (w *passiveWindow) bucketFor(now time.Time, window time.Duration) int {
	width := max(int64(window)/passiveBuckets, 1)
	epoch := now.UnixNano() / width
	switch {
	case width != w.width:
		// A first record or a reload that changed the window: the old
		// buckets measured something else.
		*w = passiveWindow{width: width, head: epoch}
	case epoch > w.head:
		w.advance(epoch)
	case epoch <= w.head-passiveBuckets:
		// The wall clock stepped back by more than the window. Starting
		// over keeps passive health working instead of waiting for the
		// clock to catch up with head.
		*w = passiveWindow{width: width, head: epoch}
	}
	return ringIndex(epoch)
}

// advance empties every bucket after head up to epoch and makes epoch the
// head. It costs at most passiveBuckets steps however long the gap.
func (w *passiveWindow) advance(epoch int64) {
	if epoch-w.head >= passiveBuckets {
		w.buckets = [passiveBuckets]passiveCounts{}
		w.totals = passiveCounts{}
	} else {
		for e := w.head + 1; e <= epoch; e++ {
			bucket := &w.buckets[ringIndex(e)]
			w.totals.Successes -= bucket.Successes
			w.totals.Failures -= bucket.Failures
			*bucket = passiveCounts{}
		}
	}
	w.head = epoch
}

// ringIndex maps a bucket's epoch index onto the ring, also for times
// before 1970.
func ringIndex(epoch int64) int {
	i := epoch % passiveBuckets
	if i < 0 {
		i += passiveBuckets
	}
	return int(i)
}

// shouldEject is the passive-health verdict on a backend's window:
// max_failures failures, or a success ratio below min_success_ratio once
// min_requests outcomes are in. A max_failures or min_success_ratio of 0
// turns that rule off.
func shouldEject(c passiveCounts, p config.PassiveHealth) bool {
	if p.MaxFailures > 0 && int64(c.Failures) >= int64(p.MaxFailures) {
		return true
	}
	requests := int64(c.Requests())
	return p.MinSuccessRatio > 0 && requests > 0 && requests >= int64(p.MinRequests) &&
		float64(c.Successes) < p.MinSuccessRatio*float64(requests)
}

// ejectionAllowed reports whether one more backend may be ejected when
// ejected of configured backends already are, without more than
// maxEjectedPercent of the pool ejected.
func ejectionAllowed(ejected, configured int, maxEjectedPercent float64) bool {
	return float64(ejected+1)*100 <= maxEjectedPercent*float64(configured)
}
