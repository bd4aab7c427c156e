package passive

import "time"

// numBuckets is how many time buckets a Window is cut into. More buckets
// make the window's edge sharper and the ring larger; 20 keeps the edge
// within 5% of the window in 160 bytes of counters.
const numBuckets = 20

// Window is the sliding window of one backend's fan-out outcomes that
// passive health judges: a fixed ring of time buckets, so its memory is
// constant, recording never allocates, and no goroutine or timer is needed
// to forget old outcomes: a bucket is emptied when time comes round to it
// again.
//
// The ring covers the buckets head-numBuckets+1 through head, where a
// bucket is a span of window/numBuckets of wall-clock time and head is
// the newest bucket seen. Between (1-1/numBuckets)·window and window of
// history is therefore in it at any moment. Running totals over the ring are
// kept up to date as buckets are emptied, so reading them is O(1).
//
// Its zero value is empty and ready. It is not safe for concurrent use:
// the backend's mutex guards it.
type Window struct {
	// width is the span of one bucket in nanoseconds; 0 before the first
	// record. A different window empties the ring.
	width int64
	// head is the index, counted from the Unix epoch, of the newest bucket.
	head    int64
	totals  Counts
	buckets [numBuckets]Counts
}

// Counts are the outcomes counted in a bucket or in the whole window.
type Counts struct {
	Successes uint32
	Failures  uint32
}

// Requests is the number of outcomes counted.
func (c Counts) Requests() uint32 { return c.Successes + c.Failures }

// Record adds one outcome that happened at now to a window of the given
// length and returns the window's counts including it.
func (w *Window) Record(now time.Time, window time.Duration, failed bool) Counts {
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
func (w *Window) Counts(now time.Time, window time.Duration) Counts {
	w.bucketFor(now, window)
	return w.totals
}

// bucketFor moves the window forward to now, emptying the buckets it
// passes, and returns the ring index of now's bucket. An outcome from a
// bucket still in the ring but older than head (a request that finished
// just before another one was recorded) goes to its own bucket. A window
// shorter than numBuckets nanoseconds is taken as one nanosecond per
// bucket.
func (w *Window) bucketFor(now time.Time, window time.Duration) int {
	width := max(int64(window)/numBuckets, 1)
	epoch := now.UnixNano() / width
	switch {
	case width != w.width:
		// A first record or a reload that changed the window: the old
		// buckets measured something else.
		*w = Window{width: width, head: epoch}
	case epoch > w.head:
		w.advance(epoch)
	case epoch <= w.head-numBuckets:
		// The wall clock stepped back by more than the window. Starting
		// over keeps passive health working instead of waiting for the
		// clock to catch up with head.
		*w = Window{width: width, head: epoch}
	}
	return ringIndex(epoch)
}

// advance empties every bucket after head up to epoch and makes epoch the
// head. It costs at most numBuckets steps however long the gap.
func (w *Window) advance(epoch int64) {
	if epoch-w.head >= numBuckets {
		w.buckets = [numBuckets]Counts{}
		w.totals = Counts{}
	} else {
		for e := w.head + 1; e <= epoch; e++ {
			bucket := &w.buckets[ringIndex(e)]
			w.totals.Successes -= bucket.Successes
			w.totals.Failures -= bucket.Failures
			*bucket = Counts{}
		}
	}
	w.head = epoch
}

// ringIndex maps a bucket's epoch index onto the ring, also for times
// before 1970.
func ringIndex(epoch int64) int {
	i := epoch % numBuckets
	if i < 0 {
		i += numBuckets
	}
	return int(i)
}
