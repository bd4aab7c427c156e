package replica

import (
	"testing"
	"time"
)

func BenchmarkChoose(b *testing.B) {
	for _, n := range []int{2, 8} {
		replicas := make([]Replica, n)
		for i := range replicas {
			// Ties half the time, so that both branches are measured.
			replicas[i] = Replica{InFlight: i % 2, Latency: time.Duration(i+1) * ms}
		}
		b.Run(map[int]string{2: "pair", 8: "eight"}[n], func(b *testing.B) {
			rng := seeded(6)
			b.ReportAllocs()
			for b.Loop() {
				Choose(replicas, rng)
			}
		})
	}
}

// BenchmarkTries is a group's whole round at its busiest: the choice, a
// hedge and a failover.
func BenchmarkTries(b *testing.B) {
	replicas := []Replica{{Latency: 5 * ms}, {Latency: 6 * ms}, {InFlight: 1, Latency: 5 * ms}}
	rng := seeded(7)
	pay := &tokens{left: 1 << 62}
	b.ReportAllocs()
	for b.Loop() {
		var tries Tries
		chosen, _ := tries.Choose(replicas, rng)
		tries.Hedge(replicas, rng, pay)
		tries.Failover(replicas, chosen, rng)
	}
}

func BenchmarkLatencyObserve(b *testing.B) {
	var l Latency
	at := epoch
	b.ReportAllocs()
	for b.Loop() {
		at = at.Add(ms)
		l.Observe(at, 5*ms)
	}
}
