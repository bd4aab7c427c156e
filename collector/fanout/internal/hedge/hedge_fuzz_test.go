package hedge

import (
	"testing"
	"time"
)

// FuzzWindow records any run of latencies, over and over so that the
// oldest are forgotten, and checks every reading against the exact last
// WindowSize answers: the p95 read is never below the true one and less
// than 1/16 above it, and the delay read from it keeps to min_after and
// to the 20 answers it needs.
func FuzzWindow(f *testing.F) {
	f.Add([]byte{0, 0, 5, 0, 0, 5, 0, 0, 5, 255, 255, 255}, uint8(0), uint16(10))
	f.Add([]byte{0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0, 0, 5, 0}, uint8(100), uint16(0))
	f.Add([]byte{0, 200, 0, 0, 201, 0, 0, 199, 0, 90, 0, 0}, uint8(255), uint16(3000))
	f.Add([]byte{}, uint8(7), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, repeat uint8, minAfterMs uint16) {
		if len(data) > 3*64 {
			data = data[:3*64]
		}
		latencies := make([]time.Duration, len(data)/3)
		for i := range latencies {
			v := int64(data[3*i])<<16 | int64(data[3*i+1])<<8 | int64(data[3*i+2])
			// A square spreads the latencies from 0 to about 20 hours,
			// past the histogram's top.
			latencies[i] = time.Duration(v * v / 4)
		}
		delay := Delay{Auto: true, MinAfter: time.Duration(minAfterMs) * ms, Timeout: time.Hour}
		w, exact := &Window{}, newExactWindow()
		for i := range len(latencies) * (1 + int(repeat)%40) {
			d := latencies[i%len(latencies)]
			w.Record(d)
			// Beyond its top the histogram counts an answer as the top.
			exact.Record(min(d, 1<<(32+unitShift)-1))
			if w.Len() != min(i+1, WindowSize) {
				t.Fatalf("after %d records Len() = %d", i+1, w.Len())
			}
			got, ok := w.P95()
			want, _ := exact.P95()
			if !ok || !within(got, want) {
				t.Fatalf("after %d records P95() = %v, %v; exact %v", i+1, got, ok, want)
			}
			after, ok := delay.For(w)
			switch {
			case w.Len() < MinAnswers && (ok || after != delay.Timeout):
				t.Fatalf("with %d answers the delay is %v, %v; want the timeout, false", w.Len(), after, ok)
			case w.Len() >= MinAnswers && after != max(got, delay.MinAfter):
				t.Fatalf("the delay is %v with p95 %v and min_after %v", after, got, delay.MinAfter)
			case ok && after >= delay.Timeout:
				t.Fatalf("a hedge after %v, not before the timeout %v", after, delay.Timeout)
			}
		}
	})
}

// FuzzBucket earns and spends in any order at any percentage, and checks
// the bucket's promises after every step: the hedges let through are at
// most maxPercent of the requests, a hedge is refused only with less than
// a token held, and the bucket never holds more than its capacity.
func FuzzBucket(f *testing.F) {
	f.Add(uint16(1000), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1})
	f.Add(uint16(10000), []byte{0, 1, 1, 0, 1})
	f.Add(uint16(1), []byte{0xff, 0, 0xff})
	f.Add(uint16(3333), []byte{0x55, 0x55, 0x55, 0x55})
	f.Fuzz(func(t *testing.T, hundredthsOfPercent uint16, ops []byte) {
		maxPercent := float64(hundredthsOfPercent%10001) / 100
		b := NewBucket(maxPercent)
		requests, hedges := 0, 0
		for _, op := range ops {
			for bit := range 8 {
				if op&(1<<bit) == 0 {
					b.Request()
					requests++
				} else {
					before := b.Tokens()
					if b.Spend() {
						hedges++
					} else if before >= 1 {
						t.Fatalf("a hedge refused with %v tokens held", before)
					}
				}
				if int64(hedges)*microTokens > int64(requests)*b.earn {
					t.Fatalf("max_percent %v: %d hedges of %d requests", maxPercent, hedges, requests)
				}
				if tokens := b.Tokens(); tokens < 0 || tokens > Capacity {
					t.Fatalf("the bucket holds %v tokens", tokens)
				}
			}
		}
	})
}
