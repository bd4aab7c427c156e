package outlier

import (
	"math"
	"time"
)

// ringBuckets is how many time buckets a window is cut into: the window's
// edge is sharp to a tenth of it, in about 1.5 KiB per backend.
const ringBuckets = 10

// latencyBins are the latency histogram's bins: bin i holds latencies
// below binUpper(i), bin 0 everything under firstBinUpper, the last
// everything above. Bins grow by √2, so a p90 read from them is within
// about 41% of the exact one: plenty to tell a backend three times slower
// than its peers.
const latencyBins = 32

// firstBinUpper is the upper bound of the first latency bin.
const firstBinUpper = 250 * time.Microsecond

// counts are the rounds counted in a bucket or in the whole window.
type counts struct {
	rounds   uint32
	failures uint32
	latency  [latencyBins]uint32
}

func (c *counts) sub(o *counts) {
	c.rounds -= o.rounds
	c.failures -= o.failures
	for i := range c.latency {
		c.latency[i] -= o.latency[i]
	}
}

// Stats is one backend's rounds over a sliding window: a fixed ring of
// time buckets with running totals, so that recording is O(1), allocates
// nothing, and needs no timer to forget (a bucket is emptied when time
// comes round to it). Not safe for concurrent use.
type Stats struct {
	// width is a bucket's span in nanoseconds, 0 before the first record;
	// a different window empties the ring.
	width int64
	// head is the index, counted from the Unix epoch, of the newest bucket.
	head  int64
	total counts
	ring  [ringBuckets]counts
}

// Summary is what a backend's window holds.
type Summary struct {
	Rounds   int
	Failures int
	// P90 is the upper bound of the latency bin that holds the 90th
	// percentile; 0 with no rounds.
	P90 time.Duration
}

// FailureRatio is the share of rounds the backend failed.
func (s Summary) FailureRatio() float64 {
	if s.Rounds == 0 {
		return 0
	}
	return float64(s.Failures) / float64(s.Rounds)
}

// Record adds one round at now: whether the backend failed it and how
// long its answer took.
func (s *Stats) Record(now time.Time, window time.Duration, failed bool, latency time.Duration) {
	b := &s.ring[s.bucketFor(now, window)]
	bin := latencyBin(latency)
	b.rounds++
	b.latency[bin]++
	s.total.rounds++
	s.total.latency[bin]++
	if failed {
		b.failures++
		s.total.failures++
	}
}

// Summary summarises the window that ends at now.
func (s *Stats) Summary(now time.Time, window time.Duration) Summary {
	s.bucketFor(now, window)
	sum := Summary{Rounds: int(s.total.rounds), Failures: int(s.total.failures)}
	if s.total.rounds == 0 {
		return sum
	}
	// The smallest bin by which at least 90% of the rounds are counted.
	need := (uint64(s.total.rounds)*9 + 9) / 10
	var seen uint64
	for i, n := range s.total.latency {
		seen += uint64(n)
		if seen >= need {
			sum.P90 = binUpper(i)
			break
		}
	}
	return sum
}

// bucketFor moves the window forward to now, emptying the buckets it
// passes, and returns the ring index of now's bucket. A clock that went
// back by more than the window starts the ring afresh.
func (s *Stats) bucketFor(now time.Time, window time.Duration) int {
	width := max(int64(window)/ringBuckets, 1)
	epoch := now.UnixNano() / width
	switch {
	case width != s.width || epoch <= s.head-ringBuckets:
		*s = Stats{width: width, head: epoch}
	case epoch > s.head:
		if epoch-s.head >= ringBuckets {
			s.ring = [ringBuckets]counts{}
			s.total = counts{}
		} else {
			for e := s.head + 1; e <= epoch; e++ {
				b := &s.ring[ringIndex(e)]
				s.total.sub(b)
				*b = counts{}
			}
		}
		s.head = epoch
	}
	return ringIndex(epoch)
}

func ringIndex(epoch int64) int {
	i := epoch % ringBuckets
	if i < 0 {
		i += ringBuckets
	}
	return int(i)
}

// latencyBin is the bin of a latency.
func latencyBin(d time.Duration) int {
	if d < firstBinUpper {
		return 0
	}
	i := int(math.Floor(2*math.Log2(float64(d)/float64(firstBinUpper)))) + 1
	return min(i, latencyBins-1)
}

// binUpper is the upper bound of bin i: firstBinUpper · √2^i.
func binUpper(i int) time.Duration {
	return time.Duration(float64(firstBinUpper) * math.Pow(2, float64(i)/2))
}
