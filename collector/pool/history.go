package pool

import (
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/history"
	"github.com/probegate/probegate/collector/snapshot"
)

// snapshotWithHistory is Snapshot with the History filled.
func (b *Backend) snapshotWithHistory() snapshot.Backend {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.snapshotLocked()
	s.History = b.stats.Records()
	return s
}

// SnapshotWithHistory is Snapshot with every backend's History and the
// pool's last state changes (Transitions) filled, for the status page.
// Snapshot leaves them out: /metrics and /healthz have no use for them.
func (p *Pool) SnapshotWithHistory() snapshot.Pool {
	s := p.snapshot(true)
	s.Transitions = p.transitionLog.NewestFirst()
	return s
}

// logTransitionLocked adds the state change from before to after at now
// to the pool's log; r is the probe result that caused it, nil when no
// probe did. The caller holds b.mu.
func (b *Backend) logTransitionLocked(before, after health.Health, now time.Time, r *health.Result) {
	if b.pool == nil {
		return
	}
	if r != nil {
		b.pool.transitionLog.Add(history.ProbeTransition(b.Name, before.State, after.State, now, *r))
		return
	}
	b.pool.transitionLog.Add(history.OverlayTransition(b.Name, before, after, now))
}
