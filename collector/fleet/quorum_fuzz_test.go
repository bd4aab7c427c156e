package fleet

import (
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// FuzzJudge plays a backend's judgements over any sequence of vantage
// points and verdicts, and checks what the verdict promises: out of
// service only on more than half of the live vantage points' verdicts,
// local exactly when none is live; a dissenter is a live vantage point
// alone in disagreeing, for longer than DissentIntervals intervals, and
// counted once per dissent; and a seed from the same verdicts keeps the
// latch and the fleet's word.
func FuzzJudge(f *testing.F) {
	f.Add(uint8(2), []byte{0x12, 0x23, 0x12, 0x20, 0x12, 0x23, 0x12, 0x23, 0x12, 0x23})
	f.Add(uint8(3), []byte{0x32, 0x02, 0x13, 0x22, 0x31, 0x02, 0x00, 0x00})
	f.Add(uint8(1), []byte{0xff, 0x7f, 0x80})
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		replicas := []string{"a", "b", "c", "d", "e"}
		const interval = 10 * time.Second
		var d Dissent
		now := at(0)
		dissentSince := map[string]time.Time{}
		// Each step is two bytes: which replicas are the vantage points
		// and which publish (a bit each), then the states they publish
		// (two bits each, rotating) and how much time passes.
		for len(data) >= 2 {
			mask, states := data[0], data[1]
			data = data[2:]
			var vantage []string
			var published []Vantage
			for i, r := range replicas {
				if mask&(1<<i) != 0 && len(vantage) < int(k%4)+1 {
					vantage = append(vantage, r)
				}
				if mask&(1<<(i+3)&0xff) != 0 || i < 2 {
					state := health.State((int(states) >> (2 * (i % 4))) & 3)
					published = append(published, Vantage{Replica: r, Verdict: Verdict{State: state, Verified: state == healthy || i%2 == 0}})
				}
			}
			now = now.Add(time.Duration(states&0x0f) * 4 * time.Second)

			var j Judgement
			prev := d
			j, d = d.Step(vantage, published, now, interval)
			live, out := 0, 0
			for _, v := range published {
				for _, name := range vantage {
					if v.Replica == name && v.Verdict.State != unknown {
						live++
						if v.Verdict.State == unhealthy {
							out++
						}
					}
				}
			}
			if j.Live != live || j.Unhealthy != out || j.OutOfService != (2*out > len(vantage)) || j.Local != (live == 0) {
				t.Fatalf("vantage %q, published %+v: %+v; %d live, %d unhealthy", vantage, published, j.Decision, live, out)
			}
			if j.Dissenter == "" {
				if j.NewDissenter {
					t.Fatal("a new dissent without a dissenter")
				}
				if d.Replica == "" {
					dissentSince = map[string]time.Time{}
				}
			} else {
				disagreeing := 0
				for _, v := range published {
					for _, name := range vantage {
						if v.Replica == name && (v.Verdict.State == unhealthy) != j.OutOfService {
							disagreeing++
							if name != j.Dissenter {
								t.Fatalf("%s named, yet %s disagrees too", j.Dissenter, name)
							}
						}
					}
				}
				if disagreeing != 1 || live < 2 {
					t.Fatalf("%s named with %d disagreeing of %d live", j.Dissenter, disagreeing, live)
				}
				if j.NewDissenter == (prev.Named && prev.Replica == j.Dissenter) {
					t.Fatalf("%s named anew %v after %+v", j.Dissenter, j.NewDissenter, prev)
				}
				if since, ok := dissentSince[j.Dissenter]; ok && now.Sub(since) <= DissentIntervals*interval {
					t.Fatalf("%s named %v after it began to disagree", j.Dissenter, now.Sub(since))
				}
			}
			if d.Replica != "" && d.Replica != prev.Replica {
				dissentSince = map[string]time.Time{d.Replica: now}
			}

			h, _ := Seed(published, 0, thresholds)
			verified := false
			for _, v := range published {
				verified = verified || v.Verdict.Verified
			}
			if h.Verified != verified || h.InService() == tally(published, func(string) bool { return true }, 0).OutOfService {
				t.Fatalf("Seed(%+v) = %+v", published, h)
			}
		}
	})
}
