package replica

import (
	"math/rand/v2"
	"slices"
)

// maxTries is the most replicas of a group one round asks: its choice, one
// failover and one hedge.
const maxTries = 3

// Tries is what one round has asked of one group: the replica it chose,
// and the sibling it asked when that one failed (Failover) or was late
// (Hedge), each at most once. A sibling is chosen as the first replica
// was, among the replicas the round has not asked yet. The indices are
// into the group's in-service replicas as the round saw them, the same
// slice every call.
//
// Its zero value has asked nobody. It is not safe for concurrent use: the
// round's waiting goroutine owns it.
type Tries struct {
	// asked holds the indices asked, sorted, in its first n entries.
	asked              [maxTries]int
	n                  int
	failedOver, hedged bool
}

// Choose picks the replica the round asks first (the package's Choose)
// and remembers it. ok is false for an empty group, or when the round has
// asked a replica already.
func (t *Tries) Choose(replicas []Replica, rng *rand.Rand) (i int, ok bool) {
	if t.n > 0 {
		return 0, false
	}
	return t.ask(replicas, rng)
}

// Failover picks the sibling that replaces the replica at index failed,
// whose request failed before its answer began, and remembers it. ok is
// false when the round has failed over once already (at most once a
// group a round), or every replica has been asked.
func (t *Tries) Failover(replicas []Replica, failed int, rng *rand.Rand) (i int, ok bool) {
	if t.failedOver {
		return 0, false
	}
	t.remember(replicas, failed)
	if i, ok = t.ask(replicas, rng); ok {
		t.failedOver = true
	}
	return i, ok
}

// Tokens is where hedges are paid from (the fan-out's hedge.Bucket).
type Tokens interface {
	// Spend takes one token, and reports whether there was one.
	Spend() bool
}

// HedgeOutcome is what became of a round's wish to hedge a group.
type HedgeOutcome int

const (
	// Hedged: a sibling is to be asked too.
	Hedged HedgeOutcome = iota
	// NoSibling: the group has no replica the round has not asked, or the
	// round has hedged it once already. No token is spent.
	NoSibling
	// HedgeRefused: there is a sibling, but no token to pay for it.
	HedgeRefused
)

// Hedge picks the sibling to ask beside the replica that has not answered
// in time, pays for it from tokens, and remembers it. A sibling is chosen
// first, so that a group with none spends no token; a refused hedge is
// not remembered, so that its sibling can still replace a replica that
// fails.
func (t *Tries) Hedge(replicas []Replica, rng *rand.Rand, tokens Tokens) (i int, outcome HedgeOutcome) {
	if t.hedged || t.n == maxTries {
		return 0, NoSibling
	}
	i, ok := choose(replicas, t.asked[:t.n], rng)
	switch {
	case !ok:
		return 0, NoSibling
	case !tokens.Spend():
		return 0, HedgeRefused
	}
	t.hedged = true
	t.remember(replicas, i)
	return i, Hedged
}

// ask picks a replica the round has not asked and remembers it.
func (t *Tries) ask(replicas []Replica, rng *rand.Rand) (int, bool) {
	if t.n == maxTries {
		return 0, false
	}
	i, ok := choose(replicas, t.asked[:t.n], rng)
	if ok {
		t.remember(replicas, i)
	}
	return i, ok
}

// remember adds i to the replicas asked, unless it is there already, is
// not a replica's index, or the round has asked all it may.
func (t *Tries) remember(replicas []Replica, i int) {
	if i < 0 || i >= len(replicas) || t.n == maxTries {
		return
	}
	at, found := slices.BinarySearch(t.asked[:t.n], i)
	if found {
		return
	}
	copy(t.asked[at+1:t.n+1], t.asked[at:t.n])
	t.asked[at] = i
	t.n++
}

// Asked reports whether the round has asked the replica at index i.
func (t *Tries) Asked(i int) bool {
	_, found := slices.BinarySearch(t.asked[:t.n], i)
	return found
}
