package fleet

import (
	"slices"

	"github.com/probegate/probegate/collector/health"
)

// Decision is the fleet's verdict on one backend.
type Decision struct {
	// Local says that none of the backend's vantage points has a live
	// verdict: the caller probes the backend itself and judges it by its
	// own machine, as without shared probing. A backend is never out of
	// service for lack of a verdict.
	Local bool
	// OutOfService says that more than half of the backend's vantage
	// points say unhealthy in a live verdict: with two, both. A vantage
	// point without a live verdict (just assigned, or its replica's
	// lease just ended) says nothing, and counts as not saying unhealthy:
	// one vantage point alone never takes a backend out while another is
	// assigned to it, so that a replica whose path is broken ejects
	// nothing in the moments its partner is being replaced.
	OutOfService bool
	// Live is how many of the backend's vantage points have a live
	// verdict that judges (any state but unknown: a vantage point that
	// has not judged the backend yet abstains), and Unhealthy how many
	// of those say unhealthy.
	Live, Unhealthy int
}

// Decide is the fleet's verdict on a backend from the verdicts published
// about it. published are the live ones (attached to a live view lease);
// only those of the backend's vantagePoints count, so that the verdict of
// a replica that has just lost the backend neither holds it out nor keeps
// it in. A replica that is a vantage point passes its own verdict among
// published, as it stands, rather than waiting to read its write back.
// A replica's verdict counts once however often it is passed.
func Decide(vantagePoints []string, published []Vantage) Decision {
	return tally(published, func(replica string) bool { return slices.Contains(vantagePoints, replica) }, len(vantagePoints))
}

// tally is the one count of a quorum, over the verdicts of published
// whose replica is counted, each replica's first only, out of expected
// vantage points (or of the live verdicts, when more are counted).
func tally(published []Vantage, counted func(replica string) bool, expected int) Decision {
	var d Decision
	for i, v := range published {
		if !counts(published, i, counted) {
			continue
		}
		if v.Verdict.State == health.StateUnknown {
			continue
		}
		d.Live++
		if v.Verdict.State == health.StateUnhealthy {
			d.Unhealthy++
		}
	}
	d.Local = d.Live == 0
	d.OutOfService = 2*d.Unhealthy > max(d.Live, expected)
	return d
}

// counts reports whether published[i] counts toward a quorum: its replica
// is counted and published none of the verdicts before it.
func counts(published []Vantage, i int, counted func(replica string) bool) bool {
	replica := published[i].Replica
	return counted(replica) && !slices.ContainsFunc(published[:i], func(v Vantage) bool { return v.Replica == replica })
}
