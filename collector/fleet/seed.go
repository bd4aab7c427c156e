package fleet

import (
	"time"

	"github.com/probegate/probegate/collector/health"
)

// Seed is the machine a replica starts from when it becomes a vantage
// point of a backend, and since when that machine's state holds, from the
// live verdicts published about the backend: its other vantage points'
// and, while its view lives, that of the replica that lost it. With none
// it is the zero machine (unknown), as for a backend never probed.
//
// What carries over is what the verdicts carry:
//   - the latch: verified if any verdict is, so that a reassignment never
//     turns a verified backend whose probe path starts refusing back into
//     a probe_unsupported one kept in service;
//   - the fleet's word: out of service when more than half of the
//     verdicts say unhealthy, and more than half of the backend's
//     vantagePoints, the rule of Decide over every verdict published, so that the new vantage point must see the backend
//     recover (the machine's successes) before it counts for readmission,
//     rather than readmit it by merely arriving. Otherwise the state is
//     healthy when the latch is set and some verdict says healthy, else
//     probe_unsupported when some verdict says so, else unknown;
//   - reachable: unreachable only when out of service and every verdict
//     says unreachable.
//
// The machine's runs are not published, so the new vantage point counts
// its own from here: an in-service seed needs the machine's failures in a
// row to go out. The runs of a seed out of service are set as the
// machine's own would stand there (not ok, and unanswered when
// unreachable, failures times). Passive ejection is each replica's own and
// never carries over.
func Seed(published []Vantage, vantagePoints int, t health.Thresholds) (health.Health, time.Time) {
	every := func(string) bool { return true }
	decision := tally(published, every, vantagePoints)
	var h health.Health
	seen, unreachable := false, true
	states := [health.NumStates]bool{}
	for i, v := range published {
		if !counts(published, i, every) {
			continue
		}
		seen = true
		h.Verified = h.Verified || v.Verdict.Verified
		unreachable = unreachable && !v.Verdict.Reachable
		states[v.Verdict.State] = true
	}
	if !seen {
		return health.Health{}, time.Time{}
	}
	switch {
	case decision.OutOfService:
		h.State = health.StateUnhealthy
		h.NotOK = t.Failures
		if unreachable {
			h.Unreachable = true
			h.Unanswered = t.Failures
		}
	case h.Verified && states[health.StateHealthy]:
		h.State = health.StateHealthy
	case states[health.StateProbeUnsupported]:
		h.State = health.StateProbeUnsupported
	}
	return h, earliestSince(published, h.State)
}

// earliestSince is the earliest known since of the verdicts in state: the
// seed's state began when the first of them saw it.
func earliestSince(published []Vantage, state health.State) time.Time {
	var since time.Time
	for _, v := range published {
		if v.Verdict.State == state && !v.Verdict.Since.IsZero() && (since.IsZero() || v.Verdict.Since.Before(since)) {
			since = v.Verdict.Since
		}
	}
	return since
}
