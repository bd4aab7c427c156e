package fleet

import (
	"testing"
	"time"
)

// BenchmarkAssign measures the vantage points of one backend among 5
// replicas, into a reused slice: what the pool asks per backend it judges.
func BenchmarkAssign(b *testing.B) {
	backends := names("prometheus-shard-%04d-b", 1024)
	m := NewMembers(names("probegate-6d8f9c7b54-%05d", 5))
	var dst []string
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		dst = m.Assign(dst[:0], backends[i&1023], 2)
	}
}

// BenchmarkStep measures one judgement of a backend with two vantage
// points that disagree.
func BenchmarkStep(b *testing.B) {
	vantage := []string{"a", "b"}
	published := said("a", unhealthy, "b", healthy)
	var d Dissent
	now := at(0)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		_, d = d.Step(vantage, published, now, time.Second)
	}
}

// BenchmarkEncode measures one verdict's wire form.
func BenchmarkEncode(b *testing.B) {
	v := representativeVerdict()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode measures reading one peer's verdict.
func BenchmarkDecode(b *testing.B) {
	data, err := Encode(representativeVerdict())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPublicationVolume reports the bytes a second one replica
// writes for 10,000 backends of which 1% change state a second (the bound
// is MaxBytesPerSecond), from the simulation of TestPublicationVolume.
func BenchmarkPublicationVolume(b *testing.B) {
	const seconds = 10
	var writes []write
	for b.Loop() {
		var err error
		if writes, err = simulatePublication(10000, 100, seconds); err != nil {
			b.Fatal(err)
		}
	}
	total := 0
	for _, w := range writes {
		total += w.bytes
	}
	busiest, count := busiestSecond(writes)
	b.ReportMetric(float64(total)/seconds, "bytes/s")
	b.ReportMetric(float64(busiest), "busiest-bytes/s")
	b.ReportMetric(float64(count), "busiest-writes/s")
}

func representativeVerdict() Verdict {
	return Verdict{State: unhealthy, Verified: true, Reachable: true, Probed: true, Class: 2, Reason: 1, Since: at(0)}
}
