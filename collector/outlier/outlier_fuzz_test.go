package outlier

import (
	"testing"
	"time"
)

// FuzzJudge checks the judge's invariants on any pool: nobody is an
// outlier without a peer, without min_rounds, or when every backend is
// alike; a failure outlier's ratio is above its peers' median by the
// gap; and a latency outlier is above the floor.
func FuzzJudge(f *testing.F) {
	f.Add([]byte{20, 20, 1, 20, 0, 1})
	f.Add([]byte{20, 0, 2, 20, 0, 30, 20, 0, 2})
	f.Add([]byte{5, 5, 200, 40, 0, 1, 40, 40, 1, 40, 3, 9})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := testSettings()
		s.MinRounds = 10
		var summaries []Summary
		for i := 0; i+2 < len(data) && len(summaries) < 64; i += 3 {
			rounds := int(data[i])
			failures := min(int(data[i+1]), rounds)
			summaries = append(summaries, Summary{Rounds: rounds, Failures: failures, P90: binUpper(int(data[i+2]) % latencyBins)})
		}
		out := make([]Verdict, len(summaries))
		var j Judge
		j.Run(summaries, s, out)
		eligibleCount := 0
		for _, sum := range summaries {
			if eligible(sum, s) {
				eligibleCount++
			}
		}
		for i, v := range out {
			if !v.Outlier {
				continue
			}
			sum := summaries[i]
			switch {
			case !eligible(sum, s) || eligibleCount < 2:
				t.Fatalf("backend %d (%+v) judged without min_rounds or a peer", i, sum)
			case v.Reason == ReasonFailure && !(sum.FailureRatio() > v.PeerMedian+s.FailureGap):
				t.Fatalf("backend %d: failure outlier at %v, peers' median %v", i, sum.FailureRatio(), v.PeerMedian)
			case v.Reason == ReasonLatency && !(sum.P90 > s.LatencyFloor && v.Value > s.LatencyFactor*v.PeerMedian):
				t.Fatalf("backend %d: latency outlier at %v, peers' median %v", i, sum.P90, v.PeerMedian)
			}
			alike := true
			for _, o := range summaries {
				if eligible(o, s) && (o.FailureRatio() != sum.FailureRatio() || o.P90 != sum.P90) {
					alike = false
				}
			}
			if alike {
				t.Fatalf("backend %d is an outlier among backends all alike: %+v", i, summaries)
			}
		}
	})
}

// FuzzStats checks that a window never holds more rounds than were
// recorded in it, whatever the order of the times.
func FuzzStats(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 0, 7})
	f.Fuzz(func(t *testing.T, steps []byte) {
		var s Stats
		now := epoch
		w := 10 * time.Second
		recorded := 0
		for _, b := range steps {
			now = now.Add(time.Duration(int(b)-100) * 100 * time.Millisecond)
			s.Record(now, w, b%2 == 0, time.Duration(b)*time.Millisecond)
			recorded++
			sum := s.Summary(now, w)
			if sum.Rounds < 1 || sum.Rounds > recorded || sum.Failures > sum.Rounds {
				t.Fatalf("summary %+v after %d records", sum, recorded)
			}
		}
	})
}
