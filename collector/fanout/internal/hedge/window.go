package hedge

import (
	"math/bits"
	"time"
)

// WindowSize is how many of a group's answers its Window remembers: the
// newest ones.
const WindowSize = 1000

const (
	// unitShift makes the histogram's unit 1,024 ns: finer than any
	// latency worth hedging, and a shift rather than a division.
	unitShift = 10
	// exactUnits is how many units from zero have a bucket each; above,
	// each doubling of the duration is cut into subBuckets buckets.
	exactUnits = 2 * subBuckets
	// subBuckets per doubling keep a bucket's width within 1/16 of the
	// durations in it.
	subBuckets = 16
	// maxUnits caps what a bucket can hold at 2^32 units (about 73
	// minutes); a longer answer counts as that long.
	maxUnits = 1 << 32
	// numBuckets is how many buckets the units below maxUnits take:
	// bucketOf(maxUnits-1)+1.
	numBuckets = (32-5)*subBuckets + exactUnits
)

// Window is a group's last WindowSize answers' latencies, kept as a
// histogram of log-scale buckets over a ring of the bucket each answer fell
// in, so that recording evicts the oldest answer in constant time and
// memory (the package doc says why this and not the exact durations).
// A percentile read from it is the upper edge of the bucket the true
// percentile lies in: never below it, and above it by less than 1/16 of
// it or 1,024 ns, whichever is more.
//
// Its zero value is empty and ready. It is not safe for concurrent use:
// the group's owner guards it.
type Window struct {
	// ring holds the bucket of each answer remembered; next is where the
	// next answer goes, and once the ring is full, the oldest answer.
	ring [WindowSize]uint16
	next int
	// answers is how many answers the ring holds, at most WindowSize.
	answers int
	// counts is how many remembered answers each bucket holds; nonEmpty
	// has a bit set for every bucket whose count is not zero, so that a
	// read skips the empty ones.
	counts   [numBuckets]uint16
	nonEmpty [(numBuckets + 63) / 64]uint64
}

// Record remembers an answer that took d, forgetting the oldest once
// WindowSize answers are remembered. A negative d counts as zero.
func (w *Window) Record(d time.Duration) {
	if w.answers == WindowSize {
		w.remove(w.ring[w.next])
	} else {
		w.answers++
	}
	b := bucketOf(unitsOf(d))
	w.ring[w.next] = b
	w.next = (w.next + 1) % WindowSize
	if w.counts[b] == 0 {
		w.nonEmpty[b/64] |= 1 << (b % 64)
	}
	w.counts[b]++
}

// remove forgets one answer of bucket b.
func (w *Window) remove(b uint16) {
	w.counts[b]--
	if w.counts[b] == 0 {
		w.nonEmpty[b/64] &^= 1 << (b % 64)
	}
}

// Len is how many answers the window remembers.
func (w *Window) Len() int { return w.answers }

// P95 is the 95th percentile of the answers remembered, by nearest rank
// (the smallest duration at least 95% of them do not exceed), read as the
// upper edge of its bucket. ok is false when the window is empty.
func (w *Window) P95() (p95 time.Duration, ok bool) {
	if w.answers == 0 {
		return 0, false
	}
	// The percentile is the rank-th smallest answer, which is the
	// fromTop-th largest: the histogram is read from its top, where a
	// few buckets hold the 5% it needs.
	rank := (95*w.answers + 99) / 100
	fromTop := w.answers - rank + 1
	seen := 0
	for word := len(w.nonEmpty) - 1; word >= 0; word-- {
		for set := w.nonEmpty[word]; set != 0; {
			bit := bits.Len64(set) - 1
			b := word*64 + bit
			if seen += int(w.counts[b]); seen >= fromTop {
				return upperEdge(b), true
			}
			set &^= 1 << bit
		}
	}
	panic("hedge: the window's counts add up to fewer answers than it holds")
}

// unitsOf is d in the histogram's units, between 0 and maxUnits-1.
func unitsOf(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return min(uint64(d)>>unitShift, maxUnits-1)
}

// bucketOf is the bucket of a duration of u units, u below maxUnits: u
// itself below exactUnits, and above, the doubling u is in and which
// sixteenth of it.
func bucketOf(u uint64) uint16 {
	if u < exactUnits {
		return uint16(u)
	}
	shift := bits.Len64(u) - 5
	return uint16(shift*subBuckets + int(u>>shift))
}

// upperEdge is the longest duration bucket b holds, in nanoseconds.
func upperEdge(b int) time.Duration {
	shift := max(b/subBuckets-1, 0)
	mantissa := uint64(b - shift*subBuckets)
	return time.Duration((mantissa+1)<<shift<<unitShift - 1)
}
