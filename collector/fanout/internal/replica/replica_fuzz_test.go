package replica

import (
	"testing"
	"time"
)

// FuzzTries builds a group from any bytes (two a replica: its requests in
// flight and its recent latency) and plays any sequence of choices,
// failovers and hedges on it, checking what the rule promises: a replica
// strictly busier than every other is never chosen, no replica is asked
// twice in a round, a failover and a hedge happen at most once each, and
// a call asks nobody only when the round has no replica left to ask, has
// used its one failover or hedge, or has no token to pay a hedge with.
func FuzzTries(f *testing.F) {
	f.Add([]byte{0, 5, 0, 15}, uint64(1), []byte{0, 1, 2}, uint8(1))
	f.Add([]byte{3, 5, 1, 5, 2, 0}, uint64(2), []byte{0, 2, 1, 2, 1}, uint8(0))
	f.Add([]byte{1, 1}, uint64(3), []byte{0, 1, 2, 0}, uint8(9))
	f.Add([]byte{}, uint64(4), []byte{2, 1, 0}, uint8(2))
	f.Fuzz(func(t *testing.T, group []byte, seed uint64, steps []byte, budget uint8) {
		if len(group) > 32 {
			group = group[:32]
		}
		replicas := make([]Replica, len(group)/2)
		busiest, unique := -1, false
		for i := range replicas {
			replicas[i] = Replica{InFlight: int(group[2*i] % 8), Latency: time.Duration(group[2*i+1]) * ms}
			switch {
			case busiest < 0 || replicas[i].InFlight > replicas[busiest].InFlight:
				busiest, unique = i, true
			case replicas[i].InFlight == replicas[busiest].InFlight:
				unique = false
			}
		}
		rng := seeded(seed)
		for range 8 {
			i, ok := Choose(replicas, rng)
			switch {
			case ok != (len(replicas) > 0):
				t.Fatalf("Choose of %d replicas: ok %v", len(replicas), ok)
			case ok && (i < 0 || i >= len(replicas)):
				t.Fatalf("Choose of %d replicas chose %d", len(replicas), i)
			case ok && len(replicas) > 1 && unique && i == busiest:
				t.Fatalf("Choose chose %d, busier than every other of %+v", i, replicas)
			}
		}

		var tries Tries
		pay := &tokens{left: int(budget % 4)}
		asked := map[int]bool{}
		chosen, failedOver, hedged := -1, false, false
		if len(steps) > 16 {
			steps = steps[:16]
		}
		for _, s := range steps {
			var i int
			var ok bool
			switch s % 3 {
			case 0:
				i, ok = tries.Choose(replicas, rng)
				if !ok && len(asked) == 0 && len(replicas) > 0 {
					t.Fatalf("the first Choose of %d replicas chose nobody", len(replicas))
				}
				if ok && chosen >= 0 {
					t.Fatal("a round chose twice")
				}
				if ok {
					chosen = i
				}
			case 1:
				i, ok = tries.Failover(replicas, chosen, rng)
				if ok && failedOver {
					t.Fatal("a round failed over twice")
				}
				left := len(replicas) - len(asked)
				if chosen >= 0 && !asked[chosen] {
					left--
				}
				if !ok && !failedOver && left > 0 && len(asked) < maxTries {
					t.Fatalf("no failover with %d replicas left to ask", left)
				}
				failedOver = failedOver || ok
			case 2:
				before := pay.left
				var outcome HedgeOutcome
				i, outcome = tries.Hedge(replicas, rng, pay)
				ok = outcome == Hedged
				switch {
				case ok && hedged:
					t.Fatal("a round hedged twice")
				case outcome == HedgeRefused && before > 0:
					t.Fatalf("a hedge refused with %d tokens", before)
				case outcome == NoSibling && !hedged && len(asked) < min(len(replicas), maxTries):
					t.Fatalf("no sibling to hedge with, with %d of %d replicas asked", len(asked), len(replicas))
				case outcome != Hedged && pay.left != before:
					t.Fatal("a hedge not sent spent a token")
				}
				hedged = hedged || ok
			}
			if !ok {
				continue
			}
			if i < 0 || i >= len(replicas) || asked[i] {
				t.Fatalf("asked replica %d of %d, asked already: %v", i, len(replicas), asked[i])
			}
			asked[i] = true
		}
	})
}

// FuzzLatency observes any answers at any times, in or out of order, and
// checks that the recent latency stays between the shortest and the
// longest answer observed (a nanosecond at the least), and is 0 only
// before the first.
func FuzzLatency(f *testing.F) {
	f.Add([]byte{0, 5, 10, 15, 200, 1, 0, 0})
	f.Add([]byte{255, 255, 0, 0, 128, 3})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var l Latency
		at := epoch
		shortest, longest := time.Duration(1<<62), time.Duration(0)
		for k := 0; k+1 < len(data); k += 2 {
			// A gap byte above 200 steps back in time.
			gap := time.Duration(data[k]) * 50 * ms
			if data[k] > 200 {
				gap = -gap
			}
			at = at.Add(gap)
			took := time.Duration(int(data[k+1])*int(data[k+1])-100) * ms
			l.Observe(at, took)
			shortest, longest = min(shortest, max(took, 1)), max(longest, max(took, 1))
			if v := l.Value(); v < shortest-1 || v > longest+1 {
				t.Fatalf("recent latency %v outside the answers' %v to %v", v, shortest, longest)
			}
		}
		if len(data) < 2 && l.Value() != 0 {
			t.Fatalf("nothing observed, yet %v", l.Value())
		}
	})
}
