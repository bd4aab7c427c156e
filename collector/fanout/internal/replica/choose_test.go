package replica

import (
	"container/heap"
	"math/rand/v2"
	"testing"
	"time"
)

const ms = time.Millisecond

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed+1)) }

func TestChooseSmallGroups(t *testing.T) {
	rng := seeded(1)
	if i, ok := Choose(nil, rng); ok {
		t.Errorf("an empty group chose %d", i)
	}
	for range 100 {
		if i, ok := Choose([]Replica{{InFlight: 50, Latency: time.Hour}}, rng); !ok || i != 0 {
			t.Fatalf("a group of one chose %d, %v; want its replica", i, ok)
		}
	}
}

// shares draws n choices among replicas, unchanged between draws, and
// returns each replica's share of them.
func shares(replicas []Replica, n int, rng *rand.Rand) []float64 {
	counts := make([]float64, len(replicas))
	for range n {
		i, ok := Choose(replicas, rng)
		if !ok {
			panic("no replica chosen")
		}
		counts[i]++
	}
	for i := range counts {
		counts[i] /= float64(n)
	}
	return counts
}

// TestChooseShares checks the rule's shares where they can be worked out:
// of two, the one with fewer in flight always; in a tie, by the inverse of
// the latency; unmeasured, as much as the other; of three, a replica is
// drawn in two pairs of three and wins both when it is the least busy.
func TestChooseShares(t *testing.T) {
	for _, c := range []struct {
		name     string
		replicas []Replica
		want     []float64
	}{
		{"fewer in flight wins", []Replica{{InFlight: 3, Latency: ms}, {InFlight: 2, Latency: time.Second}}, []float64{0, 1}},
		{"tie: alike", []Replica{{InFlight: 1, Latency: 5 * ms}, {InFlight: 1, Latency: 5 * ms}}, []float64{0.5, 0.5}},
		{"tie: three times slower gets a quarter", []Replica{{Latency: 5 * ms}, {Latency: 15 * ms}}, []float64{0.75, 0.25}},
		{"tie: unmeasured weighs as the other", []Replica{{Latency: 5 * ms}, {}}, []float64{0.5, 0.5}},
		{"tie: neither measured", []Replica{{}, {}}, []float64{0.5, 0.5}},
		{"of three, the least busy wins its two pairs", []Replica{{InFlight: 0}, {InFlight: 1}, {InFlight: 2}}, []float64{2.0 / 3, 1.0 / 3, 0}},
		{"of three alike, a third each", []Replica{{Latency: ms}, {Latency: ms}, {Latency: ms}}, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := shares(c.replicas, 40000, seeded(2))
			for i := range got {
				if d := got[i] - c.want[i]; d > 0.015 || d < -0.015 {
					t.Fatalf("shares %.3f, want %.3f", got, c.want)
				}
			}
		})
	}
}

// TestNoReplicaStarves plays a group's traffic through time: a request
// every interval, each to the replica Choose picks from its requests in
// flight and its recent latency, answered after that replica's latency,
// which updates both. A replica three times slower than its sibling still
// gets a share, and less than the fast one, whether the requests overlap
// or not.
func TestNoReplicaStarves(t *testing.T) {
	for _, c := range []struct {
		name      string
		latencies []time.Duration
		interval  time.Duration
	}{
		{"two, one at a time", []time.Duration{5 * ms, 15 * ms}, 20 * ms},
		{"two, overlapping", []time.Duration{5 * ms, 15 * ms}, ms},
		{"three, one slow, overlapping", []time.Duration{5 * ms, 5 * ms, 15 * ms}, ms},
		{"three, one slow, heavily overlapping", []time.Duration{5 * ms, 5 * ms, 15 * ms}, ms / 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := simulate(c.latencies, c.interval, 20*time.Second, seeded(3))
			slow := len(got) - 1
			for fast := range slow {
				if !(got[slow] > 0.05 && got[slow] < got[fast]) {
					t.Fatalf("shares %.3f: the slow replica should keep a share, below each fast one's", got)
				}
			}
		})
	}
}

// simulate sends a request every interval for the span given to one of
// the replicas, each of which answers after its latency, and returns each
// replica's share of the requests.
func simulate(latencies []time.Duration, interval, span time.Duration, rng *rand.Rand) []float64 {
	start := time.Unix(1_700_000_000, 0)
	recent := make([]Latency, len(latencies))
	replicas := make([]Replica, len(latencies))
	counts := make([]float64, len(latencies))
	var pending answers
	n := 0
	for at := time.Duration(0); at < span; at += interval {
		// The answers due by now come in first.
		for len(pending) > 0 && pending[0].at <= at {
			a := heap.Pop(&pending).(answer)
			replicas[a.replica].InFlight--
			recent[a.replica].Observe(start.Add(a.at), latencies[a.replica])
		}
		for i := range replicas {
			replicas[i].Latency = recent[i].Value()
		}
		i, _ := Choose(replicas, rng)
		replicas[i].InFlight++
		counts[i]++
		n++
		heap.Push(&pending, answer{at: at + latencies[i], replica: i})
	}
	for i := range counts {
		counts[i] /= float64(n)
	}
	return counts
}

// answers are the requests in flight, a heap by when they are answered.
type answers []answer

type answer struct {
	at      time.Duration
	replica int
}

func (a answers) Len() int           { return len(a) }
func (a answers) Less(i, j int) bool { return a[i].at < a[j].at }
func (a answers) Swap(i, j int)      { a[i], a[j] = a[j], a[i] }
func (a *answers) Push(x any)        { *a = append(*a, x.(answer)) }
func (a *answers) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

func TestNth(t *testing.T) {
	for _, c := range []struct {
		rank  int
		asked []int
		want  int
	}{
		{0, nil, 0}, {2, nil, 2}, {0, []int{0}, 1}, {1, []int{1}, 2}, {0, []int{1}, 0},
		{0, []int{0, 1}, 2}, {1, []int{0, 2}, 3}, {2, []int{0, 2, 4}, 5}, {1, []int{3}, 1},
	} {
		if got := nth(c.rank, c.asked); got != c.want {
			t.Errorf("nth(%d, %v) = %d, want %d", c.rank, c.asked, got, c.want)
		}
	}
}
