package replica

import (
	"testing"
	"time"
)

// tokens is a hedge budget of so many tokens.
type tokens struct{ left, spent int }

func (t *tokens) Spend() bool {
	if t.left == 0 {
		return false
	}
	t.left--
	t.spent++
	return true
}

// step is one call on a round's Tries: choose, failover (of the replica
// the round chose), or hedge.
type step int

const (
	choose1 step = iota
	failover
	hedge
)

func TestTries(t *testing.T) {
	two := []Replica{{Latency: 5 * ms}, {Latency: 5 * ms}}
	three := []Replica{{Latency: 5 * ms}, {Latency: 5 * ms}, {Latency: 5 * ms}}
	for _, c := range []struct {
		name     string
		replicas []Replica
		tokens   int
		steps    []step
		// want is, for each step, whether it asked a replica.
		want []bool
		// refused is how many hedges found no token.
		refused int
	}{
		{"empty group", nil, 5, []step{choose1, failover, hedge}, []bool{false, false, false}, 0},
		{"group of one: nobody to fail over to or hedge with, no token spent", []Replica{{}}, 5, []step{choose1, failover, hedge}, []bool{true, false, false}, 0},
		{"chosen once", two, 5, []step{choose1, choose1}, []bool{true, false}, 0},
		{"failover once a round", three, 5, []step{choose1, failover, failover}, []bool{true, true, false}, 0},
		{"hedge once a round", three, 5, []step{choose1, hedge, hedge}, []bool{true, true, false}, 0},
		{"failover after a hedge: none left of two", two, 5, []step{choose1, hedge, failover}, []bool{true, true, false}, 0},
		{"hedge after a failover: none left of two", two, 5, []step{choose1, failover, hedge}, []bool{true, true, false}, 0},
		{"of three: the choice, a hedge and a failover", three, 5, []step{choose1, hedge, failover, hedge, failover}, []bool{true, true, true, false, false}, 0},
		{"a refused hedge leaves its sibling for a failover", two, 0, []step{choose1, hedge, failover}, []bool{true, false, true}, 1},
		{"a refused hedge may be wished again", three, 0, []step{choose1, hedge, hedge}, []bool{true, false, false}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := seeded(4)
			budget := &tokens{left: c.tokens}
			var tries Tries
			var asked []int
			chosen, refused := -1, 0
			for k, s := range c.steps {
				var i int
				var ok bool
				switch s {
				case choose1:
					if i, ok = tries.Choose(c.replicas, rng); ok {
						chosen = i
					}
				case failover:
					i, ok = tries.Failover(c.replicas, chosen, rng)
				case hedge:
					var outcome HedgeOutcome
					i, outcome = tries.Hedge(c.replicas, rng, budget)
					ok = outcome == Hedged
					if outcome == HedgeRefused {
						refused++
					}
				}
				if ok != c.want[k] {
					t.Fatalf("step %d asked a replica: %v, want %v", k, ok, c.want[k])
				}
				if !ok {
					continue
				}
				for _, a := range asked {
					if a == i {
						t.Fatalf("step %d asked replica %d again (asked %v)", k, i, asked)
					}
				}
				if i < 0 || i >= len(c.replicas) {
					t.Fatalf("step %d asked replica %d of %d", k, i, len(c.replicas))
				}
				asked = append(asked, i)
			}
			for _, i := range asked {
				if !tries.Asked(i) {
					t.Errorf("replica %d was asked, but Asked(%d) is false", i, i)
				}
			}
			if refused != c.refused {
				t.Errorf("%d hedges refused, want %d", refused, c.refused)
			}
			if hedges := refused + budget.spent; budget.spent > c.tokens || hedges > len(c.steps) {
				t.Errorf("%d tokens spent of %d", budget.spent, c.tokens)
			}
		})
	}
}

// TestFailoverPrefersTheIdleSibling: the sibling of a failover is chosen
// as the first replica was, so of the two siblings left the one with fewer
// requests in flight replaces the failed one, whatever their latencies.
func TestFailoverPrefersTheIdleSibling(t *testing.T) {
	replicas := []Replica{{InFlight: 0, Latency: time.Second}, {InFlight: 9, Latency: ms}, {InFlight: 1, Latency: time.Second}}
	rng := seeded(5)
	for range 100 {
		var tries Tries
		chosen, _ := tries.Choose(replicas, rng)
		want := -1
		for i := range replicas {
			if i != chosen && (want < 0 || replicas[i].InFlight < replicas[want].InFlight) {
				want = i
			}
		}
		if i, ok := tries.Failover(replicas, chosen, rng); !ok || i != want {
			t.Fatalf("replica %d failed: failed over to %d, %v; want %d, the less busy sibling", chosen, i, ok, want)
		}
	}
}
