package history

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The shape of a backend's probe duration histogram, as client_golang
// would build it from a bucket factor of 1.1, at most 40 native buckets
// and a minimum reset duration of an hour: native buckets from schema 3
// (each 2^(1/8) ≈ 1.09 wider than the last), halved in resolution
// whenever a 41st bucket is filled, and started afresh at full
// resolution an hour after the last start (a counter reset for
// Prometheus).
const (
	durationSchema     = 3
	lowestSchema       = -4
	maxDurationBuckets = 40
	durationResetAfter = time.Hour
	// durationZeroThreshold is client_golang's default zero bucket
	// width, 2^-128.
	durationZeroThreshold = 2.938735877055719e-39
)

// schema3Bounds are the upper bounds, as fractions of a power of two, of
// the buckets of schema 3 within one power of two, as client_golang has
// them; schemas 1 and 2 use every fourth or every second of them. Keys
// computed from the same constants the same way as client_golang's are
// the same keys, boundaries included.
var schema3Bounds = [8]float64{
	0.5, 0.5452538663326288, 0.5946035575013605, 0.6484197773255048,
	0.7071067811865475, 0.7711054127039704, 0.8408964152537144, 0.9170040432046711,
}

// durationsDesc describes the histogram; the exporter writes its series
// with the backend's labels, so it has none of its own.
var durationsDesc = prometheus.NewDesc("probegate_backend_probe_duration_seconds",
	"Duration of the backend's health probes.", nil, nil)

// nativeBucket is one filled native bucket: its key at the histogram's
// schema and its count.
type nativeBucket struct {
	key   int32
	count uint32
}

// Durations is a backend's probe duration histogram: one classic bucket
// and native buckets, written as client_golang's own histogram of the
// same options would write it, in a fraction of its memory. client_golang
// keeps two copies of every count, so that observing never blocks, in
// sync.Maps of about 100 bytes a bucket, a Desc and a timer per
// histogram: some 3 KiB a backend. A backend observes once a probe under
// its own mutex, so a plain mutex and a sorted slice of 8-byte buckets
// serve as well. Its zero value is not ready: use NewDurations.
type Durations struct {
	mu sync.Mutex
	// count, sum and fast (the observations in the classic bucket,
	// at most fastProbe) are as the exposition has them; zero counts the
	// observations at or below the zero threshold.
	count, fast, zero uint64
	sum               float64
	schema            int32
	// started is when the histogram last started afresh: its created
	// timestamp. resetDue is when a narrowed one goes back to full
	// resolution, zero while at it.
	started, resetDue time.Time
	// buckets are sorted by key.
	buckets []nativeBucket
}

// NewDurations returns an empty histogram started at now.
func NewDurations(now time.Time) *Durations {
	return &Durations{schema: durationSchema, started: now}
}

// Observe adds one duration in seconds, observed at now. It does not
// allocate once the duration's bucket is filled. A negative duration or a
// NaN, which a duration measured on the monotonic clock cannot be, counts
// in the zero bucket, where client_golang would count it in a negative
// bucket, or in no native bucket at all.
func (d *Durations) Observe(seconds float64, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	// A histogram that counted 2^32 observations starts afresh too, so
	// that no bucket's 32-bit count can overflow.
	if !d.resetDue.IsZero() && !now.Before(d.resetDue) || d.count >= math.MaxUint32 {
		d.reset(now)
	}
	d.observe(seconds)
	if len(d.buckets) <= maxDurationBuckets {
		return
	}
	// Too many buckets: start afresh if the last start is an hour
	// past, as client_golang does, keeping the observation; otherwise
	// halve the resolution and start afresh an hour after the last
	// start.
	if d.resetDue.IsZero() && now.Sub(d.started) >= durationResetAfter {
		d.reset(now)
		d.observe(seconds)
		return
	}
	if d.resetDue.IsZero() {
		d.resetDue = d.started.Add(durationResetAfter)
	}
	d.halveResolution()
}

// observe counts seconds; the caller holds d.mu.
func (d *Durations) observe(seconds float64) {
	d.count++
	d.sum += seconds
	if seconds <= fastProbe {
		d.fast++
	}
	if !(seconds > durationZeroThreshold) {
		d.zero++
		return
	}
	key := nativeKey(seconds, d.schema)
	i, found := slices.BinarySearchFunc(d.buckets, key, func(b nativeBucket, k int32) int { return int(b.key) - int(k) })
	if found {
		d.buckets[i].count++
		return
	}
	d.buckets = slices.Insert(d.buckets, i, nativeBucket{key: key, count: 1})
}

// reset empties the histogram and starts it afresh at now at full
// resolution; the caller holds d.mu.
func (d *Durations) reset(now time.Time) {
	d.count, d.fast, d.zero, d.sum = 0, 0, 0, 0
	d.schema, d.started, d.resetDue = durationSchema, now, time.Time{}
	d.buckets = d.buckets[:0]
}

// halveResolution merges every two neighbouring buckets into one of the
// next lower schema, down to the lowest; the caller holds d.mu.
func (d *Durations) halveResolution() {
	if d.schema == lowestSchema {
		return
	}
	d.schema--
	merged := d.buckets[:0]
	for _, b := range d.buckets {
		// Bucket k of a schema is bucket ⌈k/2⌉ of the next lower one.
		key := b.key
		if key > 0 {
			key++
		}
		key /= 2
		if n := len(merged); n > 0 && merged[n-1].key == key {
			merged[n-1].count += b.count
			continue
		}
		merged = append(merged, nativeBucket{key: key, count: b.count})
	}
	d.buckets = merged
}

// nativeKey is the key of the bucket at schema that holds v > 0, as
// client_golang computes it.
func nativeKey(v float64, schema int32) int32 {
	if math.IsInf(v, 1) {
		return nativeKey(math.MaxFloat64, schema) + 1
	}
	frac, exp := math.Frexp(v)
	if schema > 0 {
		step := 1 << (durationSchema - schema)
		j := 0
		for j < len(schema3Bounds)/step && schema3Bounds[j*step] < frac {
			j++
		}
		return int32(j + (exp-1)*(len(schema3Bounds)/step))
	}
	key := exp
	if frac == 0.5 {
		key--
	}
	offset := (1 << -schema) - 1
	return int32((key + offset) >> -schema)
}

// Desc describes the histogram, for prometheus.Metric.
func (d *Durations) Desc() *prometheus.Desc { return durationsDesc }

// Write writes the histogram into out as client_golang writes a
// histogram: the classic bucket, then the native buckets as spans and
// deltas, two empty buckets at most bridged within a span.
func (d *Durations) Write(out *dto.Metric) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	count, sum, fast, zero := d.count, d.sum, d.fast, d.zero
	upper, threshold, schema := fastProbe, durationZeroThreshold, d.schema
	h := &dto.Histogram{
		SampleCount:      &count,
		SampleSum:        &sum,
		Bucket:           []*dto.Bucket{{CumulativeCount: &fast, UpperBound: &upper}},
		CreatedTimestamp: timestamppb.New(d.started),
		Schema:           &schema,
		ZeroThreshold:    &threshold,
		ZeroCount:        &zero,
	}
	h.PositiveSpan, h.PositiveDelta = spans(d.buckets)
	out.Histogram = h
	out.Label = nil
	return nil
}

// spans encodes sorted buckets as native histogram spans and deltas.
func spans(buckets []nativeBucket) ([]*dto.BucketSpan, []int64) {
	if len(buckets) == 0 {
		return nil, nil
	}
	var (
		out    []*dto.BucketSpan
		deltas = make([]int64, 0, len(buckets))
		prev   int64
		next   int32
	)
	for n, b := range buckets {
		gap := b.key - next
		if n == 0 || gap > 2 {
			offset, length := gap, uint32(0)
			out = append(out, &dto.BucketSpan{Offset: &offset, Length: &length})
		} else {
			for range gap {
				*out[len(out)-1].Length++
				deltas = append(deltas, -prev)
				prev = 0
			}
		}
		*out[len(out)-1].Length++
		deltas = append(deltas, int64(b.count)-prev)
		prev = int64(b.count)
		next = b.key + 1
	}
	return out, deltas
}
