package pool

import (
	"sync"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// TransitionLogLength is how many of the pool's last state changes it
// keeps for the status page.
const TransitionLogLength = 50

// The causes of a state change besides a probe.
const (
	CauseProbe       = "probe"
	CauseMaintenance = "maintenance"
	CauseEjection    = "ejection"
	CauseReadmission = "readmission"
)

// Transition is one state change of a backend.
type Transition struct {
	Time     time.Time
	Backend  string
	From, To health.State
	// Cause is CauseProbe when a probe result caused it, whose class,
	// reason and status follow; otherwise what did (maintenance, an
	// ejection by fan-out traffic, a readmission).
	Cause      string
	Class      health.Class
	Reason     health.Reason
	StatusCode int
	Status     string
}

// transitionLog is a fixed ring of the pool's last state changes, shared
// by its backends. A state change writes a slot and allocates nothing.
// It is locked inside a backend's mutex, never the other way round.
type transitionLog struct {
	mu      sync.Mutex
	entries [TransitionLogLength]Transition
	next, n int
}

func (l *transitionLog) add(t Transition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries[l.next] = t
	l.next = (l.next + 1) % TransitionLogLength
	l.n = min(l.n+1, TransitionLogLength)
}

// newestFirst returns the state changes, the latest first.
func (l *transitionLog) newestFirst() []Transition {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Transition, l.n)
	for i := range out {
		out[i] = l.entries[(l.next-1-i+TransitionLogLength)%TransitionLogLength]
	}
	return out
}

// transitionCause names what changed a backend's health from before to
// after when no probe did.
func transitionCause(before, after health.Health) string {
	switch {
	case before.State == health.StateMaintenance || after.State == health.StateMaintenance:
		return CauseMaintenance
	case after.Ejected && !before.Ejected:
		return CauseEjection
	case before.Ejected && !after.Ejected:
		return CauseReadmission
	}
	return ""
}

// logTransitionLocked adds the state change from before to after at now
// to the pool's log; r is the probe result that caused it, nil when no
// probe did. The caller holds b.mu.
func (b *Backend) logTransitionLocked(before, after health.Health, now time.Time, r *health.Result) {
	if b.transitionLog == nil {
		return
	}
	t := Transition{Time: now, Backend: b.Name, From: before.State, To: after.State}
	if r != nil {
		t.Cause, t.Class, t.Reason, t.StatusCode, t.Status = CauseProbe, r.Class, r.Reason, r.StatusCode, r.Status
	} else {
		t.Cause = transitionCause(before, after)
	}
	b.transitionLog.add(t)
}
