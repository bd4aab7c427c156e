package hedge

import "time"

// MinAnswers is how many answers a group's Window needs before its p95
// sets an automatic delay: fewer say too little about the group's tail.
const MinAnswers = 20

// Delay is when a round asks a sibling of a group's chosen replica that
// has not answered yet.
type Delay struct {
	// Auto reads the delay from the group's recent answers (after: auto);
	// otherwise After is the delay.
	Auto  bool
	After time.Duration
	// MinAfter is the shortest delay there is, automatic or not.
	MinAfter time.Duration
	// Timeout is the round's; 0 is none.
	Timeout time.Duration
}

// For is how long after asking a group's chosen replica the round asks a
// sibling too, given the group's recent answers (nil when it keeps none).
// Automatic, it is the group's p95, at least MinAfter; with fewer than
// MinAnswers answers it is the timeout, so no hedge comes before the round
// ends. ok is false when no hedge can come before the round ends: the
// delay is not shorter than the timeout, or there is no timeout and too
// few answers to read a delay from.
func (d Delay) For(recent *Window) (after time.Duration, ok bool) {
	switch {
	case !d.Auto:
		after = max(d.After, d.MinAfter)
	case recent == nil || recent.Len() < MinAnswers:
		return d.Timeout, false
	default:
		p95, _ := recent.P95()
		after = max(p95, d.MinAfter)
	}
	if d.Timeout > 0 && after >= d.Timeout {
		return after, false
	}
	return after, true
}
