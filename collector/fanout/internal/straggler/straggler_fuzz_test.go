package straggler

import (
	"testing"
	"time"
)

// FuzzRule plays rounds of any latencies through the rule and checks what
// it promises: nobody is cut before min_wait, nor before a majority and
// the quorum have contributed, nor within factor times the median of the
// contributions; and when every backend takes the same time, nobody is
// cut at all.
func FuzzRule(f *testing.F) {
	f.Add(uint8(30), uint8(50), uint8(1), []byte{5, 5, 200, 6, 5})
	f.Add(uint8(10), uint8(0), uint8(3), []byte{1, 2, 3, 4, 255, 255})
	f.Add(uint8(20), uint8(20), uint8(1), []byte{200, 200, 200, 200})
	f.Add(uint8(11), uint8(1), uint8(9), []byte{})
	f.Fuzz(func(t *testing.T, factorTenths, minWaitMs, quorum uint8, data []byte) {
		rule := Rule{Factor: 1 + float64(factorTenths%100+1)/10, MinWait: time.Duration(minWaitMs) * ms, Quorum: max(int(quorum)%16, 1)}
		if len(data) > 64 {
			data = data[:64]
		}
		latencies := make([]time.Duration, len(data))
		alike := true
		for i, b := range data {
			// A square spreads the latencies from 0 to about 65s.
			latencies[i] = time.Duration(int(b)*int(b)) * ms
			alike = alike && b == data[0]
		}
		cut, at := simulate(rule, latencies)
		if len(cut) == 0 {
			return
		}
		if alike {
			t.Fatalf("every backend took %v, yet %v were cut at %v", latencies[0], cut, at)
		}
		if at < rule.MinWait {
			t.Fatalf("cut at %v, before min_wait %v", at, rule.MinWait)
		}
		isCut := make([]bool, len(latencies))
		for _, i := range cut {
			isCut[i] = true
		}
		r := NewRound(rule, len(latencies))
		for i, d := range latencies {
			if !isCut[i] {
				r.Contributed(d)
			}
		}
		selected, contributed := len(latencies), len(latencies)-len(cut)
		if 2*contributed < selected || contributed < rule.Quorum {
			t.Fatalf("cut %v with %d contributions of %d, fewer than half or the quorum %d", cut, contributed, selected, rule.Quorum)
		}
		waited := scale(median(r.latencies), rule.Factor)
		for _, i := range cut {
			if latencies[i] <= waited || latencies[i] <= at {
				t.Fatalf("backend %d cut at %v although it took %v, within %v times the median of the others", i, at, latencies[i], rule.Factor)
			}
		}
	})
}
