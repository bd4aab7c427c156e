package hedge

import (
	"math/rand/v2"
	"testing"
	"time"
)

// latencies is n answers' latencies shaped as a fan-out's: a fast body, a
// slow tail, a stall now and then.
func latencies(n int) []time.Duration {
	rng := rand.New(rand.NewPCG(3, 4))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(rng.ExpFloat64() * float64(5*ms))
		if rng.IntN(20) == 0 {
			out[i] = 2 * time.Second
		}
	}
	return out
}

// The two ways of keeping the last answers that the package doc weighs,
// recording into a full window and reading its p95: the histogram
// (Window) and the exact durations (exactWindow), each through the same
// interface so that they pay the same for the call.

type window interface {
	Record(time.Duration)
	P95() (time.Duration, bool)
}

func BenchmarkWindowRecord(b *testing.B)      { benchmarkRecord(b, &Window{}) }
func BenchmarkExactWindowRecord(b *testing.B) { benchmarkRecord(b, newExactWindow()) }
func BenchmarkWindowP95(b *testing.B)         { benchmarkP95(b, &Window{}) }
func BenchmarkExactWindowP95(b *testing.B)    { benchmarkP95(b, newExactWindow()) }

func benchmarkRecord(b *testing.B, w window) {
	ds := latencies(4096)
	for _, d := range ds {
		w.Record(d)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w.Record(ds[i%len(ds)])
	}
}

func benchmarkP95(b *testing.B, w window) {
	for _, d := range latencies(WindowSize) {
		w.Record(d)
	}
	b.ReportAllocs()
	for b.Loop() {
		w.P95()
	}
}

func BenchmarkBucket(b *testing.B) {
	bucket := NewBucket(10)
	b.ReportAllocs()
	for b.Loop() {
		bucket.Request()
		bucket.Spend()
	}
}
