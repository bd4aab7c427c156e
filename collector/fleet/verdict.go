package fleet

import (
	"time"

	"github.com/probegate/probegate/collector/health"
)

// Verdict is what one vantage point publishes about one backend it
// probes: its state machine's word and what the views show of it.
// Passive health and outlier detection are not in it: they judge a
// replica's own traffic and stay its own.
type Verdict struct {
	// State is the vantage point's machine state.
	State health.State
	// Verified is the machine's latch: this probe path has told health
	// apart once, from this vantage point or from one it was seeded from.
	Verified bool
	// Reachable is false after the machine's failures unanswered probes
	// in a row.
	Reachable bool
	// Probed says that a result is behind Class and Reason; a vantage
	// point publishes its seeded state before its first probe.
	Probed bool
	// Class and Reason are the last result's.
	Class  health.Class
	Reason health.Reason
	// Since is when State began, as the vantage point saw it; zero when
	// it does not know. It is for people: nothing here compares it with a
	// clock.
	Since time.Time
}

// Of is the verdict of a machine's value, its last result (nil before the
// first) and since when it has been in its state.
func Of(h health.Health, last *health.Result, since time.Time) Verdict {
	v := Verdict{State: h.State, Verified: h.Verified, Reachable: h.Reachable(), Since: since}
	if last != nil {
		v.Probed, v.Class, v.Reason = true, last.Class, last.Reason
	}
	return v
}

// Vantage is a verdict and the replica that published it.
type Vantage struct {
	Replica string
	Verdict Verdict
}
