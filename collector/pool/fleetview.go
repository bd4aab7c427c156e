package pool

import (
	"slices"
	"strings"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// What /healthz, GET /api/v1/backends, the status page and /metrics show
// of shared probing, computed here once from a snapshot, so that every
// view names a backend's verdict, its vantage points and the dissenting
// replicas alike.

// The verdicts a backend is served by under shared probing
// (FleetSnapshot.Verdict).
const (
	// VerdictShared: the backend's vantage points' verdicts serve it.
	VerdictShared = "shared"
	// VerdictLocal: this replica's own probes serve it, none of its
	// vantage points having a live verdict.
	VerdictLocal = "local"
)

// Verdict is VerdictShared or VerdictLocal, and empty for a nil f: a
// backend shared probing never judged.
func (f *FleetSnapshot) Verdict() string {
	switch {
	case f == nil:
		return ""
	case f.Shared:
		return VerdictShared
	default:
		return VerdictLocal
	}
}

// VantagePointView is one vantage point of a backend in the JSON views.
// A vantage point without a live verdict is "unknown" and has no since;
// only a dissenting one says so.
type VantagePointView struct {
	Replica string `json:"replica"`
	State   string `json:"state"`
	// Since is when the vantage point's state began, as it published it,
	// formatted by the view; empty when it is not live or did not say.
	Since      string `json:"since,omitempty"`
	Dissenting bool   `json:"dissenting,omitempty"`
}

// Shown is the vantage point's state and since when, as the views show
// them: "unknown" and the zero time without a live verdict, and the zero
// time when it did not say since when.
func (vp VantagePointSnapshot) Shown() (state string, since time.Time) {
	if !vp.Live {
		return health.StateUnknown.String(), time.Time{}
	}
	return vp.State.String(), vp.Since
}

// Views are f's vantage points, highest ranked first, with their times
// formatted by formatTime; nil for a nil f, and never nil otherwise, so
// that a view omitting a nil slice shows an empty list for a backend that
// has lost every vantage point.
func (f *FleetSnapshot) Views(formatTime func(time.Time) string) []VantagePointView {
	if f == nil {
		return nil
	}
	views := make([]VantagePointView, len(f.VantagePoints))
	for i, vp := range f.VantagePoints {
		state, since := vp.Shown()
		views[i] = VantagePointView{Replica: vp.Replica, State: state, Dissenting: vp.Dissenting}
		if !since.IsZero() {
			views[i].Since = formatTime(since)
		}
	}
	return views
}

// Dissenter is a vantage point named a lone dissenter: on some backend
// it disagreed alone with the fleet's verdict for longer than
// fleet.DissentIntervals probe intervals.
type Dissenter struct {
	Replica string
	// Named counts the times it was named (Snapshot.Dissents).
	Named uint64
	// Backends counts the backends on which it dissents now.
	Backends int
}

// Dissenters are the vantage points named lone dissenters since the
// replica started, and any dissenting now, by replica name. A replica
// that no longer dissents anywhere stays listed with Backends 0, so that
// its series go to zero rather than vanish. Dissenters is empty, not nil,
// while shared probing is on, and nil while it is off.
func (s *Snapshot) Dissenters() []Dissenter {
	if s.Probing == "" {
		return nil
	}
	dissenters := make([]Dissenter, 0, len(s.Dissents))
	for replica, named := range s.Dissents {
		dissenters = append(dissenters, Dissenter{Replica: replica, Named: named})
	}
	slices.SortFunc(dissenters, func(a, b Dissenter) int { return strings.Compare(a.Replica, b.Replica) })
	for i := range s.Backends {
		f := s.Backends[i].Fleet
		if f == nil {
			continue
		}
		for _, vp := range f.VantagePoints {
			if !vp.Dissenting {
				continue
			}
			at, found := slices.BinarySearchFunc(dissenters, vp.Replica, func(d Dissenter, replica string) int { return strings.Compare(d.Replica, replica) })
			if !found {
				dissenters = slices.Insert(dissenters, at, Dissenter{Replica: vp.Replica})
			}
			dissenters[at].Backends++
		}
	}
	return dissenters
}
