package history

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

var durationsEpoch = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// clientGolangDurations is the histogram client_golang builds for the
// options probegate's durations stand for.
func clientGolangDurations() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                            "probegate_backend_probe_duration_seconds",
		Help:                            "Duration of the backend's health probes.",
		Buckets:                         []float64{fastProbe},
		NativeHistogramBucketFactor:     1.1,
		NativeHistogramMaxBucketNumber:  maxDurationBuckets,
		NativeHistogramMinResetDuration: durationResetAfter,
	})
}

// writtenHistogram is what m writes, without its created timestamp.
func writtenHistogram(t *testing.T, m prometheus.Metric) *dto.Histogram {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.GetHistogram().GetCreatedTimestamp() == nil {
		t.Fatal("no created timestamp")
	}
	out.Histogram.CreatedTimestamp = nil
	return out.GetHistogram()
}

// TestDurationsWriteAsClientGolang: fed the same durations, the compact
// histogram writes what client_golang's histogram of the same options
// writes: count, sum, the classic bucket, the schema, the zero bucket and
// the native buckets' spans and deltas, also once a spread of durations
// has made both halve their resolution again and again.
func TestDurationsWriteAsClientGolang(t *testing.T) {
	for _, tc := range []struct {
		name string
		// lo and hi bound the durations' logarithm to base 10 in seconds.
		lo, hi float64
	}{
		{"loopback", -4.5, -2.5},
		{"slow", -3, 0.5},
		{"everything", -9, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			ours, theirs := NewDurations(durationsEpoch), clientGolangDurations()
			sawSchema := map[int32]bool{}
			for i := range 3000 {
				v := math.Pow(10, tc.lo+rng.Float64()*(tc.hi-tc.lo))
				switch i % 500 {
				case 7:
					v = 0 // the zero bucket
				case 11:
					v = 0.1 // the classic bucket's bound
				case 13:
					v = 0.25 // a native bucket's bound
				}
				ours.Observe(v, durationsEpoch.Add(time.Duration(i)*time.Second/10))
				theirs.Observe(v)
				if i%97 != 0 && i != 2999 {
					continue
				}
				got, want := writtenHistogram(t, ours), writtenHistogram(t, theirs)
				if !proto.Equal(got, want) {
					t.Fatalf("after %d observations:\nours:          %s\nclient_golang: %s", i+1, prototext.Format(got), prototext.Format(want))
				}
				sawSchema[got.GetSchema()] = true
			}
			if tc.name == "everything" && len(sawSchema) < 3 {
				t.Errorf("schemas seen %v: the case did not make the histograms halve their resolution", sawSchema)
			}
		})
	}
}

// TestDurationsSpansAsClientGolang: empty buckets between filled ones are
// bridged within a span up to two, and start a new span from three, as
// client_golang writes them.
func TestDurationsSpansAsClientGolang(t *testing.T) {
	ours, theirs := NewDurations(durationsEpoch), clientGolangDurations()
	// Buckets 0, 2, 5, 9 and 14 of schema 3 above 1ms: gaps of one to
	// four empty buckets.
	for n, i := range []int{0, 2, 5, 9, 14} {
		for range n + 1 {
			v := math.Pow(2, float64(i)/8) * 1.0001e-3
			ours.Observe(v, durationsEpoch)
			theirs.Observe(v)
		}
	}
	got, want := writtenHistogram(t, ours), writtenHistogram(t, theirs)
	if !proto.Equal(got, want) || len(got.GetPositiveSpan()) < 2 {
		t.Errorf("ours:          %s\nclient_golang: %s\nwant them equal, in more than one span", prototext.Format(got), prototext.Format(want))
	}
}

// TestDurationsStartAfreshAfterAnHour: a histogram that outgrew its
// buckets within an hour of its start halves its resolution until the
// hour is over, then starts afresh at full resolution; one that outgrows
// them later starts afresh at once, keeping the observation that did it.
func TestDurationsStartAfreshAfterAnHour(t *testing.T) {
	d := NewDurations(durationsEpoch)
	overflow := func(at time.Time) {
		for i := range maxDurationBuckets + 1 {
			d.Observe(math.Pow(2, float64(i)/8)*1e-3, at)
		}
	}
	overflow(durationsEpoch.Add(time.Minute))
	if h := writtenHistogram(t, d); h.GetSchema() != durationSchema-1 || h.GetSampleCount() != maxDurationBuckets+1 {
		t.Fatalf("overflowed after a minute: schema %d, count %d; want schema %d, every observation kept", h.GetSchema(), h.GetSampleCount(), durationSchema-1)
	}
	d.Observe(0.001, durationsEpoch.Add(time.Hour))
	h := writtenHistogram(t, d)
	if h.GetSchema() != durationSchema || h.GetSampleCount() != 1 {
		t.Fatalf("an hour after the start: schema %d, count %d; want schema %d afresh with the one observation", h.GetSchema(), h.GetSampleCount(), durationSchema)
	}
	var m dto.Metric
	if err := d.Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetHistogram().GetCreatedTimestamp().AsTime(); !got.Equal(durationsEpoch.Add(time.Hour)) {
		t.Errorf("created %v, want the fresh start's", got)
	}

	overflow(durationsEpoch.Add(3 * time.Hour))
	if h := writtenHistogram(t, d); h.GetSchema() != durationSchema || h.GetSampleCount() != 1 {
		t.Errorf("overflowed two hours after the last start: schema %d, count %d; want schema %d afresh with the last observation", h.GetSchema(), h.GetSampleCount(), durationSchema)
	}
}

// heapBytes is the heap in use after a collection.
func heapBytes() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestDurationsMemory pins what a backend's probe duration histogram
// costs with 30 native buckets filled: at most 512 bytes, where
// client_golang's histogram of the same options takes some 3 KiB and more
// as its buckets fill.
func TestDurationsMemory(t *testing.T) {
	const n = 1000
	fill := func(observe func(float64)) {
		for i := range 30 * 4 {
			observe(math.Pow(2, float64(i%30)/8) * 1e-3)
		}
	}
	before := heapBytes()
	ours := make([]*Durations, n)
	for i := range ours {
		ours[i] = NewDurations(durationsEpoch)
		fill(func(v float64) { ours[i].Observe(v, durationsEpoch) })
	}
	perOurs := float64(heapBytes()-before) / n
	before = heapBytes()
	theirs := make([]prometheus.Histogram, n)
	for i := range theirs {
		theirs[i] = clientGolangDurations()
		fill(theirs[i].Observe)
	}
	perTheirs := float64(heapBytes()-before) / n
	runtime.KeepAlive(ours)
	runtime.KeepAlive(theirs)
	t.Logf("bytes per histogram with 30 native buckets: ours %.0f, client_golang's %.0f", perOurs, perTheirs)
	if perOurs > 512 {
		t.Errorf("a histogram takes %.0f bytes, want at most 512", perOurs)
	}
}

// TestDurationsObserveDoesNotAllocate: observing into a filled bucket
// allocates nothing.
func TestDurationsObserveDoesNotAllocate(t *testing.T) {
	d := NewDurations(durationsEpoch)
	d.Observe(0.002, durationsEpoch)
	if allocs := testing.AllocsPerRun(100, func() { d.Observe(0.002, durationsEpoch) }); allocs != 0 {
		t.Errorf("%v allocations per observation, want 0", allocs)
	}
}
