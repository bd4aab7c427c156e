package outlier

import (
	"slices"
	"sort"
)

// Verdict is the judgement on one backend.
type Verdict struct {
	// Outlier is set when the backend does much worse than its peers,
	// for Reason.
	Outlier bool
	Reason  Reason
	// Value is the backend's failure ratio or p90 in seconds, PeerMedian
	// the peers' median of the same, for the log line.
	Value, PeerMedian float64
}

// Judge compares each backend with the median of its peers. It keeps its
// scratch space between calls, so that judging a round allocates nothing
// once the pool's size is reached; it is not safe for concurrent use.
type Judge struct {
	ratios, p90s []float64
}

// Run judges every backend summarised in summaries and writes the
// verdicts to out, which must be as long. A backend with fewer than
// MinRounds rounds is neither judged nor a peer; a backend with no peer
// is not judged, so detection works from two backends on.
func (j *Judge) Run(summaries []Summary, s Settings, out []Verdict) {
	j.ratios, j.p90s = j.ratios[:0], j.p90s[:0]
	for _, sum := range summaries {
		if eligible(sum, s) {
			j.ratios = append(j.ratios, sum.FailureRatio())
			j.p90s = append(j.p90s, sum.P90.Seconds())
		}
	}
	slices.Sort(j.ratios)
	slices.Sort(j.p90s)
	floor := s.LatencyFloor.Seconds()
	for i, sum := range summaries {
		out[i] = Verdict{}
		if !eligible(sum, s) || len(j.ratios) < 2 {
			continue
		}
		ratio := sum.FailureRatio()
		if median := medianWithout(j.ratios, ratio); ratio > median+s.FailureGap {
			out[i] = Verdict{Outlier: true, Reason: ReasonFailure, Value: ratio, PeerMedian: median}
			continue
		}
		p90 := sum.P90.Seconds()
		if median := medianWithout(j.p90s, p90); p90 > s.LatencyFactor*median && p90 > floor {
			out[i] = Verdict{Outlier: true, Reason: ReasonLatency, Value: p90, PeerMedian: median}
		}
	}
}

// eligible reports whether a backend has enough rounds to be judged.
func eligible(sum Summary, s Settings) bool {
	return sum.Rounds > 0 && sum.Rounds >= s.MinRounds
}

// medianWithout is the median of sorted without one occurrence of v,
// which it holds. Removing any occurrence of a value leaves the same
// values, so the first will do.
func medianWithout(sorted []float64, v float64) float64 {
	k := sort.SearchFloat64s(sorted, v)
	m := len(sorted) - 1
	at := func(rank int) float64 {
		if rank >= k {
			rank++
		}
		return sorted[rank]
	}
	if m%2 == 1 {
		return at(m / 2)
	}
	return (at(m/2-1) + at(m/2)) / 2
}
