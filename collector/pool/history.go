package pool

import (
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/history"
)

// snapshotWithHistory is Snapshot with the History filled.
func (b *Backend) snapshotWithHistory() BackendSnapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.snapshotLocked()
	s.History = b.stats.Records()
	return s
}

// SnapshotWithHistory is Snapshot with every backend's History and the
// pool's last state changes (Transitions) filled, for the status page.
// Snapshot leaves them out: /metrics and /healthz have no use for them.
func (p *Pool) SnapshotWithHistory() Snapshot {
	s := p.snapshot(true)
	s.Transitions = p.transitionLog.NewestFirst()
	return s
}

// logTransitionLocked adds the state change from before to after at now
// to the pool's log; r is the probe result that caused it, nil when no
// probe did. The caller holds b.mu.
func (b *Backend) logTransitionLocked(before, after health.Served, now time.Time, r *health.Result) {
	if b.pool == nil {
		return
	}
	if r != nil {
		b.pool.transitionLog.Add(history.ProbeTransition(b.Name, before.State(), after.State(), now, *r))
		return
	}
	b.pool.transitionLog.Add(history.OverlayTransition(b.Name, before, after, now))
}

// SnapshotWithTransitions is Snapshot with the pool's last state changes
// (Transitions) filled but no backend's History: the status page shows a
// page of rows, and copies the histories of those alone
// (ProbeHistories), not the whole pool's on every request.
func (p *Pool) SnapshotWithTransitions() Snapshot {
	s := p.snapshot(false)
	s.Transitions = p.transitionLog.NewestFirst()
	return s
}

// ProbeHistories are the last probe results of the named backends, in the
// order of names: nil for a backend the pool does not have (a reload
// removed it since the snapshot that named it).
func (p *Pool) ProbeHistories(names []string) [][]history.Probe {
	at := make(map[string]int, len(names))
	for i, name := range names {
		at[name] = i
	}
	out := make([][]history.Probe, len(names))
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, b := range p.backends {
		if i, ok := at[b.Name]; ok {
			b.mu.Lock()
			out[i] = b.stats.Records()
			b.mu.Unlock()
		}
	}
	return out
}
