package hedge

import (
	"slices"
	"time"
)

// exactWindow keeps the last WindowSize durations exactly: a ring of them
// and a sorted copy. It is the other way the package doc weighs, kept here
// as the tests' oracle and the benchmarks' comparison.
type exactWindow struct {
	ring   [WindowSize]time.Duration
	next   int
	sorted []time.Duration
}

func newExactWindow() *exactWindow {
	return &exactWindow{sorted: make([]time.Duration, 0, WindowSize)}
}

func (w *exactWindow) Record(d time.Duration) {
	d = max(d, 0)
	if len(w.sorted) == WindowSize {
		old, _ := slices.BinarySearch(w.sorted, w.ring[w.next])
		w.sorted = slices.Delete(w.sorted, old, old+1)
	}
	w.ring[w.next] = d
	w.next = (w.next + 1) % WindowSize
	i, _ := slices.BinarySearch(w.sorted, d)
	w.sorted = slices.Insert(w.sorted, i, d)
}

// P95 is the nearest-rank 95th percentile of the durations kept.
func (w *exactWindow) P95() (time.Duration, bool) {
	if len(w.sorted) == 0 {
		return 0, false
	}
	return w.sorted[(95*len(w.sorted)+99)/100-1], true
}
