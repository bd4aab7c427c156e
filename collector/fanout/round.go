package fanout

import "time"

// RoundSummary describes one fan-out round: the fan-out fills it after each
// round and /healthz shows the latest as last_fanout.
type RoundSummary struct {
	// Time is when the round started.
	Time time.Time
	// Contributed is how many backends contributed to the merged response.
	Contributed int
	// Configured is how many backends were configured at the time.
	Configured int
	// Partial is true when Contributed < Configured.
	Partial bool
}
