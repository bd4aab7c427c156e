package pool

import (
	"time"

	"github.com/probegate/probegate/collector/health"
)

// noteTransitionLocked records a state change at now that no probe caused
// (see noteProbeTransitionLocked). The caller holds b.mu.
func (b *Backend) noteTransitionLocked(before, after health.Served, now time.Time) {
	b.noteProbeTransitionLocked(before, after, now, nil)
}

// noteProbeTransitionLocked records a state change at now, caused by the
// probe result r when not nil: it counts the state entered, remembers
// when, opens or closes a stretch out of service, and adds it to the
// pool's log of transitions. before and after are what the backend is
// served as, overlays included, so that the change recorded is the one
// every reader shows; a change hidden under an overlay records nothing.
// The caller holds b.mu.
func (b *Backend) noteProbeTransitionLocked(before, after health.Served, now time.Time, r *health.Result) {
	if before.State() == after.State() {
		return
	}
	b.logTransitionLocked(before, after, now, r)
	b.transitions[after.State()]++
	b.downtime.Note(before.InService(), after.InService(), now)
}

// clock is the pool's clock, or time.Now for a backend built outside a pool.
func (b *Backend) clock() time.Time {
	if b.pool == nil {
		return time.Now()
	}
	return b.pool.now()
}

// transitioned tells the pool that the backend changed state, so that it
// re-evaluates fail-open. The caller holds no lock of the backend's.
func (b *Backend) transitioned() {
	if b.pool != nil {
		b.pool.noteFailOpen()
	}
}
