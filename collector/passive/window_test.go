package passive

import (
	"testing"
	"time"
	"unsafe"
)

// epoch is a fixed start for the clock the window is given.
var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func wantCounts(t *testing.T, what string, got Counts, successes, failures uint32) {
	t.Helper()
	if got.Successes != successes || got.Failures != failures {
		t.Errorf("%s: counts %+v; want %d successes, %d failures", what, got, successes, failures)
	}
}

func TestWindowCountsWithinWindow(t *testing.T) {
	const window = 10 * time.Second // 500ms buckets
	var w Window
	now := epoch
	w.Record(now, window, true)
	w.Record(now.Add(100*time.Millisecond), window, false)
	c := w.Record(now.Add(3*time.Second), window, true)
	wantCounts(t, "after three outcomes", c, 1, 2)
	wantCounts(t, "just inside the window", w.Counts(now.Add(9*time.Second), window), 1, 2)
	// The first bucket [0, 500ms) leaves the window once the head is
	// numBuckets buckets later.
	wantCounts(t, "first bucket expired", w.Counts(now.Add(window), window), 0, 1)
	wantCounts(t, "all expired", w.Counts(now.Add(3*time.Second+window), window), 0, 0)
	c = w.Record(now.Add(time.Hour), window, false)
	wantCounts(t, "after a long gap", c, 1, 0)
}

func TestWindowSlidesBucketByBucket(t *testing.T) {
	const window = 2 * time.Second // 100ms buckets
	var w Window
	// One failure in each of 40 consecutive buckets: once the ring is full
	// it holds exactly numBuckets of them.
	for i := range 40 {
		c := w.Record(epoch.Add(time.Duration(i)*100*time.Millisecond), window, true)
		want := uint32(min(i+1, numBuckets))
		wantCounts(t, "sliding", c, 0, want)
	}
}

func TestWindowLateOutcomeGoesToItsBucket(t *testing.T) {
	const window = 2 * time.Second
	var w Window
	w.Record(epoch.Add(time.Second), window, false)
	// An outcome finished 300ms before the one already recorded (two
	// requests racing for the lock) still counts, in its own bucket, and
	// leaves the window 300ms earlier.
	w.Record(epoch.Add(700*time.Millisecond), window, true)
	wantCounts(t, "both counted", w.Counts(epoch.Add(time.Second), window), 1, 1)
	wantCounts(t, "late one gone first", w.Counts(epoch.Add(2800*time.Millisecond), window), 1, 0)
}

func TestWindowClockStepsBack(t *testing.T) {
	const window = 2 * time.Second
	var w Window
	w.Record(epoch, window, true)
	c := w.Record(epoch.Add(-time.Hour), window, true)
	wantCounts(t, "after the clock stepped back an hour", c, 0, 1)
	c = w.Record(epoch.Add(-time.Hour+time.Second), window, false)
	wantCounts(t, "recording goes on", c, 1, 1)
}

func TestWindowChangedWindowStartsOver(t *testing.T) {
	var w Window
	w.Record(epoch, 10*time.Second, true)
	w.Record(epoch, 10*time.Second, true)
	c := w.Record(epoch, 20*time.Second, false)
	wantCounts(t, "after a reload changed the window", c, 1, 0)
}

func TestWindowIsConstantSizeAndDoesNotAllocate(t *testing.T) {
	if size := unsafe.Sizeof(Window{}); size > 256 {
		t.Errorf("Window is %d bytes; want a small constant", size)
	}
	var w Window
	now := epoch
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(37 * time.Millisecond)
		w.Record(now, 30*time.Second, now.UnixNano()%3 == 0)
	})
	if allocs != 0 {
		t.Errorf("Record allocates %v times per call; want 0", allocs)
	}
}
