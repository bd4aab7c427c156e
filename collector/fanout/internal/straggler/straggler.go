// Package straggler is the rule by which a fan-out round stops waiting for
// the backends its peers outrun. Every backend of a round answers the same
// query, so the contributions that are in say how long the query takes: a
// backend still running long after the median of its peers is a straggler,
// and when every backend is slow alike the median is slow too and nobody
// is cut.
//
// Nothing here does I/O or reads a clock: the fan-out passes in how long
// after the round's start each contribution came, and is told how long
// after the start it may answer without the rest.
package straggler

import (
	"math"
	"slices"
	"time"
)

// Rule is when a round may answer without the backends still running.
type Rule struct {
	// Factor times the median latency of the contributions so far is how
	// long the round waits; more than 1.
	Factor float64
	// MinWait is the least the round waits before it cuts anybody.
	MinWait time.Duration
	// Quorum is how many contributions the round needs at the least (its
	// min_contributors).
	Quorum int
}

// Needed is how many contributions a round of selected backends needs
// before it may cut anybody: the quorum, and at least half of the round
// (rounded up), so that the median it judges by is that of a majority.
func (r Rule) Needed(selected int) int {
	return max(r.Quorum, (selected+1)/2)
}

// Round is one round's contributions as they come in. It is not safe for
// concurrent use: the round's one waiting goroutine owns it.
type Round struct {
	rule     Rule
	selected int
	// latencies are the contributions' latencies since the round began,
	// sorted.
	latencies []time.Duration
}

// NewRound starts the count of a round of selected backends.
func NewRound(rule Rule, selected int) *Round {
	return &Round{rule: rule, selected: selected, latencies: make([]time.Duration, 0, selected)}
}

// Contributed records a contribution that came elapsed after the round
// began.
func (r *Round) Contributed(elapsed time.Duration) {
	i, _ := slices.BinarySearch(r.latencies, elapsed)
	r.latencies = slices.Insert(r.latencies, i, elapsed)
}

// CutAfter is how long after its start the round may answer without the
// backends still running: the larger of MinWait and Factor times the
// median latency of the contributions. ok is false while the round must
// wait for more contributions, and once every backend has contributed
// (nobody is left to cut).
func (r *Round) CutAfter() (after time.Duration, ok bool) {
	n := len(r.latencies)
	if n < r.rule.Needed(r.selected) || n >= r.selected {
		return 0, false
	}
	return max(r.rule.MinWait, scale(median(r.latencies), r.rule.Factor)), true
}

// median is the median of sorted, which is not empty: the middle value,
// or the mean of the two middle ones.
func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	a, b := sorted[n/2-1], sorted[n/2]
	// Halved first, so that two long durations cannot overflow.
	return a/2 + b/2 + (a%2+b%2)/2
}

// scale is d times factor, capped at the longest duration there is.
func scale(d time.Duration, factor float64) time.Duration {
	product := float64(d) * factor
	if product >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(product)
}
