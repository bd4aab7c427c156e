package hedge

import (
	"math/rand/v2"
	"testing"
	"time"
)

const ms = time.Millisecond

// record returns a window holding each of runs, in order: count answers
// of the duration.
func record(runs ...run) *Window {
	w := &Window{}
	for _, r := range runs {
		for range r.count {
			w.Record(r.took)
		}
	}
	return w
}

type run struct {
	count int
	took  time.Duration
}

// within reports whether got is what a Window may read for the true
// percentile want: not below it, and above it by less than 1/16 of it or
// 1,024 ns.
func within(got, want time.Duration) bool {
	return got >= want && got-want < max(want/16, 1024)
}

func TestWindowP95(t *testing.T) {
	for _, c := range []struct {
		name   string
		runs   []run
		want   time.Duration
		wantOK bool
	}{
		{"empty", nil, 0, false},
		{"one answer", []run{{1, 5 * ms}}, 5 * ms, true},
		{"one slow of twenty is the 5% above p95", []run{{19, 5 * ms}, {1, 2 * time.Second}}, 5 * ms, true},
		{"two slow of twenty reach p95", []run{{18, 5 * ms}, {2, 2 * time.Second}}, 2 * time.Second, true},
		{"fifty slow of a thousand stay above p95", []run{{950, 5 * ms}, {50, 2 * time.Second}}, 5 * ms, true},
		{"fifty-one slow of a thousand reach p95", []run{{949, 5 * ms}, {51, 2 * time.Second}}, 2 * time.Second, true},
		{"the oldest answers are forgotten", []run{{1000, 2 * time.Second}, {1000, 5 * ms}}, 5 * ms, true},
		{"forgotten but for the newest fifty-one", []run{{1000, 5 * ms}, {949, 2 * time.Second}, {51, 7 * ms}}, 2 * time.Second, true},
		{"negative counts as zero", []run{{3, -time.Second}}, 0, true},
		{"under a microsecond", []run{{5, 900}, {5, 100}}, 900, true},
		{"longer than the histogram counts as its top", []run{{1, 100 * time.Hour}}, 1<<42 - 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := record(c.runs...).P95()
			if ok != c.wantOK || (ok && !within(got, c.want)) {
				t.Errorf("P95() = %v, %v; want %v (or up to 1/16 above), %v", got, ok, c.want, c.wantOK)
			}
		})
	}
}

func TestWindowLen(t *testing.T) {
	for _, c := range []struct{ records, want int }{{0, 0}, {1, 1}, {999, 999}, {1000, 1000}, {2500, 1000}} {
		if got := record(run{c.records, ms}).Len(); got != c.want {
			t.Errorf("after %d records Len() = %d, want %d", c.records, got, c.want)
		}
	}
}

// TestWindowAgreesWithExact plays long runs of latencies shaped as a
// fan-out's are (a fast body, a slow tail, a stall now and then) through
// the window and the exact one, and checks every reading.
func TestWindowAgreesWithExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w, exact := &Window{}, newExactWindow()
	for i := range 5000 {
		d := time.Duration(rng.ExpFloat64() * float64(5*ms))
		if rng.IntN(20) == 0 {
			d = 2*time.Second + time.Duration(rng.Int64N(int64(ms)))
		}
		w.Record(d)
		exact.Record(d)
		got, _ := w.P95()
		want, _ := exact.P95()
		if !within(got, want) {
			t.Fatalf("after %d answers P95() = %v, exact %v", i+1, got, want)
		}
	}
}

// TestBuckets checks the histogram's buckets at every edge: each duration
// is in a bucket whose upper edge is not below it and less than 1/16 or
// one unit above it, and buckets follow one another without gaps.
func TestBuckets(t *testing.T) {
	if got := bucketOf(maxUnits - 1); int(got) != numBuckets-1 {
		t.Fatalf("the longest duration is in bucket %d, want the last, %d", got, numBuckets-1)
	}
	for b := range numBuckets {
		edge := upperEdge(b)
		units := uint64(edge) >> unitShift
		if int(bucketOf(units)) != b {
			t.Fatalf("bucket %d's upper edge %v is in bucket %d", b, edge, bucketOf(units))
		}
		if units+1 < maxUnits && int(bucketOf(units+1)) != b+1 {
			t.Fatalf("the unit after bucket %d's upper edge is in bucket %d, want %d", b, bucketOf(units+1), b+1)
		}
		lower := time.Duration(0)
		if b > 0 {
			lower = upperEdge(b-1) + 1
		}
		if !within(edge, lower) {
			t.Fatalf("bucket %d holds %v to %v: wider than its error bound", b, lower, edge)
		}
	}
}
