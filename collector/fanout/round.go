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
	// Backends is each configured backend's part in the round: the
	// selected ones in config order, then the skipped ones.
	Backends []RoundBackend
}

// Outcome is what a backend's part in a round came to.
type Outcome uint8

// The outcomes of a backend in a round.
const (
	// OutcomeContributed is a backend whose answer was merged.
	OutcomeContributed Outcome = iota
	// OutcomeFailed is a selected backend that did not contribute.
	OutcomeFailed
	// OutcomeSkipped is a backend out of service, not asked at all.
	OutcomeSkipped
)

var outcomeNames = [...]string{"contributed", "failed", "skipped"}

func (o Outcome) String() string { return outcomeNames[o] }

// RoundBackend is one backend's part in a round.
type RoundBackend struct {
	Name    string
	Outcome Outcome
	// Reason says why a failed or skipped backend is missing from the
	// round, in the words of X-Backends-Missing; NotMissing for a
	// contribution. Status is the HTTP status it answered, 0 for none.
	Reason MissingReason
	Status int
}

// roundBackends lists the part of every backend in a round: those asked
// in the order asked, then the skipped ones of missing.
func roundBackends(answers []backendAnswer, missing []missingBackend) []RoundBackend {
	out := make([]RoundBackend, 0, len(answers)+len(missing))
	for _, a := range answers {
		rb := RoundBackend{Name: a.backend.Name, Status: a.status}
		if !a.contributed {
			rb.Outcome, rb.Reason = OutcomeFailed, missingAnswer(a.outcome.Reason)
		}
		out = append(out, rb)
	}
	for _, m := range missing {
		if m.reason.Skipped() {
			out = append(out, RoundBackend{Name: m.name, Outcome: OutcomeSkipped, Reason: m.reason})
		}
	}
	return out
}
