package status

import (
	"time"

	"github.com/probegate/probegate/collector/pool"
)

// What the page shows of shared probing: the replica's mode in the
// header, the replicas named lone dissenters in the summary, and in each
// backend's state cell the verdict it is served by and its vantage
// points.

// probingView is the replica's shared probing, nil while it is off.
type probingView struct {
	// Mode is pool.ProbingShared or pool.ProbingLocal.
	Mode       string
	Dissenters []pool.Dissenter
}

func newProbingView(s *pool.Snapshot) *probingView {
	if s.Probing == "" {
		return nil
	}
	return &probingView{Mode: s.Probing, Dissenters: s.Dissenters()}
}

// fleetView is a backend's verdict (pool.VerdictShared or
// pool.VerdictLocal) and its vantage points, highest ranked first.
type fleetView struct {
	Verdict       string
	VantagePoints []vantagePointView
}

// vantagePointView is one vantage point: its state, "unknown" without a
// live verdict, since when as a time and as an age (empty when it did not
// say), and whether it dissents.
type vantagePointView struct {
	Replica, State  string
	Since, SinceAgo string
	Dissenting      bool
}

// newFleetView is f for the page at now; nil for a backend shared probing
// never judged.
func newFleetView(f *pool.FleetSnapshot, now time.Time) *fleetView {
	if f == nil {
		return nil
	}
	v := &fleetView{Verdict: f.Verdict(), VantagePoints: make([]vantagePointView, len(f.VantagePoints))}
	for i, vp := range f.VantagePoints {
		state, since := vp.Shown()
		row := vantagePointView{Replica: vp.Replica, State: state, Dissenting: vp.Dissenting}
		if !since.IsZero() {
			row.Since, row.SinceAgo = since.UTC().Format(time.RFC3339), human(now.Sub(since))
		}
		v.VantagePoints[i] = row
	}
	return v
}
