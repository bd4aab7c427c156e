package pool

import (
	"time"

	"github.com/probegate/probegate/collector/traffic"
)

// This file is the one way a fan-out round enters the pool: each
// backend's outcome goes to its traffic counts and passive health, and
// the round to outlier detection, after one decision about the round as a
// whole (whether its failures are correlated).

// RoundSample is one backend's part in a fan-out round.
type RoundSample struct {
	Backend *Backend
	// Outcome is what the backend's request came to. Its Correlated
	// field is the pool's to set: RecordRound decides it for the round.
	Outcome traffic.Outcome
	// Latency is how long the backend took to answer, body included, or
	// for a straggler how long the round waited for it.
	Latency time.Duration
}

// RecordRound hands the pool a finished fan-out round, one sample per
// backend asked. A failure is charged only when the round's failures are
// not correlated (correlatedFailure); a straggler cut is never charged to
// passive health, which has no word for "slower than its peers this
// once", but outlier detection judges it by the time it was given. It
// reports whether the round's failures were correlated, for the fan-out
// to count.
func (p *Pool) RecordRound(samples []RoundSample) (correlated bool) {
	correlated = correlatedFailure(samples)
	local := true
	for i := range samples {
		o := &samples[i].Outcome
		o.Correlated = correlated && o.Failed
		if !o.Erred || o.Reason != traffic.Local {
			local = false
		}
		if o.Erred && o.Reason == traffic.Straggler {
			continue
		}
		samples[i].Backend.chargeTraffic(*o)
	}
	// A round refused before any backend was asked tells outlier
	// detection nothing, and judging the pool again for it would make
	// refusals under load cost what rounds cost.
	if !local {
		p.judgeRound(samples)
	}
	return correlated
}

// correlatedFailure is the rule that keeps a client's query from
// charging backends: when every backend asked in a round fails alike, the
// query is the likelier culprit (or an outage, which the probes judge), so
// such a round charges nobody. A round of one backend is not correlated:
// its failure is charged. A local outcome (probegate's own fault) is
// neither a failure nor a success of the backend.
func correlatedFailure(samples []RoundSample) bool {
	succeeded, failed := false, false
	for _, s := range samples {
		switch o := s.Outcome; {
		case o.Failed:
			failed = true
		case !o.Erred || o.Reason != traffic.Local:
			succeeded = true
		}
	}
	return failed && !succeeded && len(samples) > 1
}
