package fanout

import "time"

// RoundSummary describes one fan-out round: the fan-out fills it after each
// round and /healthz shows the latest as last_fanout.
type RoundSummary struct {
	// Time is when the round started.
	Time time.Time
	// Contributed is how many replica groups contributed to the merged
	// response; without groups, each backend is a group of its own.
	Contributed int
	// Configured is how many replica groups were configured at the time.
	Configured int
	// Partial is true when Contributed < Configured.
	Partial bool
	// Backends is each configured backend's part in the round: those
	// asked by group in the order asked, then those in service a sibling
	// answered for, then those skipped.
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
	// OutcomeOutrun is a replica asked whose request was cancelled once a
	// sibling of its group answered first.
	OutcomeOutrun
	// OutcomeUnasked is a replica in service the round did not ask: its
	// group asked a sibling.
	OutcomeUnasked
)

var outcomeNames = [...]string{"contributed", "failed", "skipped", "outrun", "unasked"}

func (o Outcome) String() string { return outcomeNames[o] }

// RoundBackend is one backend's part in a round.
type RoundBackend struct {
	Name string
	// Group is the backend's replica group, empty when the pool has none.
	Group   string
	Outcome Outcome
	// Reason says why a failed or skipped backend is missing from the
	// round, in the words of X-Backends-Missing; NotMissing for a
	// contribution. Status is the HTTP status it answered, 0 for none.
	Reason MissingReason
	Status int
}

// roundBackends lists the part of every backend in a round: those asked
// by group in the order asked, then those in service a sibling answered
// for, then the skipped ones. grouped names each backend's group.
func roundBackends(rd *round, grouped bool) []RoundBackend {
	// Every backend of the round's groups has one entry: a round asks no
	// replica twice.
	size := 0
	for i := range rd.groups {
		size += len(rd.groups[i].replicas) + len(rd.groups[i].skipped)
	}
	out := make([]RoundBackend, 0, size)
	groupOf := func(g *roundGroup) string {
		if grouped {
			return g.name
		}
		return ""
	}
	for a := range rd.ordered {
		g := &rd.groups[a.group]
		rb := RoundBackend{Name: g.replicas[a.replica].Name, Group: groupOf(g), Status: a.answer.status}
		switch {
		case a.answer.contributed:
		case a.lost:
			rb.Outcome = OutcomeOutrun
		default:
			rb.Outcome, rb.Reason = OutcomeFailed, missingAnswer(a.answer.outcome.Reason)
		}
		out = append(out, rb)
	}
	for i := range rd.groups {
		g := &rd.groups[i]
		for j, b := range g.replicas {
			if !g.tries.Asked(j) {
				out = append(out, RoundBackend{Name: b.Name, Group: groupOf(g), Outcome: OutcomeUnasked})
			}
		}
	}
	for i := range rd.groups {
		g := &rd.groups[i]
		for _, b := range g.skipped {
			out = append(out, RoundBackend{Name: b.Name, Group: groupOf(g), Outcome: OutcomeSkipped, Reason: missingSkipped(b.Served())})
		}
	}
	return out
}
