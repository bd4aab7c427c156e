package straggler

import (
	"cmp"
	"slices"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestNeeded(t *testing.T) {
	for _, c := range []struct {
		quorum, selected, want int
	}{
		{1, 1, 1}, {1, 2, 1}, {1, 3, 2}, {1, 4, 2}, {1, 5, 3}, {3, 4, 3}, {5, 5, 5}, {7, 5, 7}, {1, 0, 1},
	} {
		if got := (Rule{Quorum: c.quorum}).Needed(c.selected); got != c.want {
			t.Errorf("quorum %d of %d selected: needed %d, want %d", c.quorum, c.selected, got, c.want)
		}
	}
}

func TestCutAfter(t *testing.T) {
	rule := Rule{Factor: 3, MinWait: 50 * ms, Quorum: 1}
	for _, c := range []struct {
		name     string
		rule     Rule
		selected int
		arrived  []time.Duration
		want     time.Duration
		wantOK   bool
	}{
		{"nothing in yet", rule, 5, nil, 0, false},
		{"fewer than half in", rule, 5, []time.Duration{5 * ms, 5 * ms}, 0, false},
		{"half in, fast: min_wait", rule, 5, []time.Duration{5 * ms, 4 * ms, 6 * ms}, 50 * ms, true},
		{"half in, slow: factor times median", rule, 5, []time.Duration{30 * ms, 20 * ms, 40 * ms}, 90 * ms, true},
		{"even count: mean of the middle two", rule, 5, []time.Duration{20 * ms, 40 * ms, 10 * ms, 60 * ms}, 90 * ms, true},
		{"four fast of five", rule, 5, []time.Duration{5 * ms, 5 * ms, 6 * ms, 5 * ms}, 50 * ms, true},
		{"everyone in: nobody to cut", rule, 3, []time.Duration{5 * ms, 5 * ms, 5 * ms}, 0, false},
		{"quorum above half", Rule{Factor: 3, MinWait: 50 * ms, Quorum: 4}, 5, []time.Duration{5 * ms, 5 * ms, 5 * ms}, 0, false},
		{"quorum reached", Rule{Factor: 3, MinWait: 50 * ms, Quorum: 4}, 5, []time.Duration{5 * ms, 5 * ms, 5 * ms, 5 * ms}, 50 * ms, true},
		{"quorum of every backend", Rule{Factor: 3, MinWait: 0, Quorum: 5}, 5, []time.Duration{5 * ms, 5 * ms, 5 * ms, 5 * ms}, 0, false},
		{"no min_wait", Rule{Factor: 2, Quorum: 1}, 2, []time.Duration{7 * ms}, 14 * ms, true},
		{"a huge median does not overflow", Rule{Factor: 3, Quorum: 1}, 3, []time.Duration{1 << 62, 1 << 62}, 1<<63 - 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewRound(c.rule, c.selected)
			for _, d := range c.arrived {
				r.Contributed(d)
			}
			got, ok := r.CutAfter()
			if got != c.want || ok != c.wantOK {
				t.Errorf("CutAfter() = %v, %v; want %v, %v", got, ok, c.want, c.wantOK)
			}
		})
	}
}

// TestOneStalledAmongFast plays the round the rule is for through simulate:
// four backends answering in about 5ms and one stalled for 2s. The stalled
// one is cut at min_wait; with every backend slow alike, nobody is.
func TestOneStalledAmongFast(t *testing.T) {
	rule := Rule{Factor: 3, MinWait: 50 * ms, Quorum: 1}
	cut, at := simulate(rule, []time.Duration{5 * ms, 4 * ms, 2 * time.Second, 6 * ms, 5 * ms})
	if len(cut) != 1 || cut[0] != 2 || at != 50*ms {
		t.Errorf("cut %v at %v; want backend 2 at 50ms", cut, at)
	}
	cut, at = simulate(rule, []time.Duration{200 * ms, 210 * ms, 190 * ms, 205 * ms, 200 * ms})
	if len(cut) != 0 {
		t.Errorf("every backend slow alike: cut %v at %v; want nobody", cut, at)
	}
	// Three of four stalled: half have not answered, so nobody is cut and
	// the round waits for them.
	cut, _ = simulate(rule, []time.Duration{5 * ms, 2 * time.Second, 2 * time.Second, 2 * time.Second})
	if len(cut) != 0 {
		t.Errorf("a minority answered: cut %v; want nobody", cut)
	}
}

// simulate plays a round whose backends contribute after latencies, as the
// fan-out waits: each contribution in order of arrival, the round cut when
// its CutAfter comes before the next arrival (an arrival at the very
// moment of the cut is in time). It returns the indices of the backends
// cut and when.
func simulate(rule Rule, latencies []time.Duration) (cut []int, at time.Duration) {
	order := make([]int, len(latencies))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(latencies[a], latencies[b]) })
	r := NewRound(rule, len(latencies))
	for k, i := range order {
		if after, ok := r.CutAfter(); ok && after < latencies[i] {
			return order[k:], after
		}
		r.Contributed(latencies[i])
	}
	return nil, 0
}
