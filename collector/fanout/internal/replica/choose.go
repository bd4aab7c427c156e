// Package replica chooses which replica of a group a fan-out round asks,
// and which sibling it asks when that one fails or is late. The replicas
// of a group hold the same data, so one answer from any of them makes the
// group whole; the choice spreads the rounds so that every replica keeps a
// share, and a busier or slower one gets less.
//
// Nothing here does I/O or reads a clock: the fan-out passes in each
// replica's requests in flight and recent latency, the time of each
// answer, and the randomness to draw with.
package replica

import (
	"math/rand/v2"
	"time"
)

// Replica is what the choice reads of one in-service replica of a group.
type Replica struct {
	// InFlight is how many of the fan-out's requests to it are running.
	InFlight int
	// Latency is its recent latency (Latency.Value); 0 while none is
	// measured.
	Latency time.Duration
}

// Choose picks which of a group's in-service replicas a round asks, by the
// power of two choices: of two drawn at random, the one with fewer
// requests in flight; when they tie, one of the two at random, weighted by
// the inverse of its recent latency. A replica none of whose answers is
// measured yet weighs as much as the other of the two, so that it is
// measured soon and not flooded meanwhile. ok is false for an empty group;
// a group of one is its replica.
//
// Every replica keeps a share: it is drawn as often as any, and it wins
// whenever the other drawn is busier, so its latency stays measured; a
// slower one is busier for longer and weighs less in a tie, so it gets
// less. The randomness keeps rounds that start together from herding onto
// the same replica.
func Choose(replicas []Replica, rng *rand.Rand) (i int, ok bool) {
	return choose(replicas, nil, rng)
}

// choose is Choose among the replicas whose indices are not in asked,
// which is sorted and holds indices of replicas only.
func choose(replicas []Replica, asked []int, rng *rand.Rand) (int, bool) {
	left := len(replicas) - len(asked)
	switch left {
	case 0:
		return 0, false
	case 1:
		return nth(0, asked), true
	}
	first := rng.IntN(left)
	second := rng.IntN(left - 1)
	if second >= first {
		second++
	}
	a, b := nth(first, asked), nth(second, asked)
	if replicas[a].InFlight != replicas[b].InFlight {
		if replicas[a].InFlight < replicas[b].InFlight {
			return a, true
		}
		return b, true
	}
	la, lb := replicas[a].Latency, replicas[b].Latency
	if la <= 0 || lb <= 0 {
		la, lb = 1, 1
	}
	// a wins with the weight 1/la of the total 1/la + 1/lb, which is
	// lb / (la + lb).
	if rng.Float64()*(float64(la)+float64(lb)) < float64(lb) {
		return a, true
	}
	return b, true
}

// nth is the index of the rank-th replica (from 0) of those not in asked,
// which is sorted.
func nth(rank int, asked []int) int {
	i := rank
	for _, a := range asked {
		if a > i {
			break
		}
		i++
	}
	return i
}
