package pool

import (
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/passive"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

// recordTraffic counts one fan-out outcome and, with passive health on,
// adds it to the window. It reports whether the window now calls for
// ejecting the backend (which is in service and not yet ejected); the
// caller decides whether the pool can spare it. It does not allocate.
func (b *Backend) recordTraffic(o traffic.Outcome, now time.Time, p config.PassiveHealth) (ejectDue bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o.Erred {
		b.trafficErrors[o.Reason]++
	}
	return b.passive.Record(now, o, p) && passive.Ejectable(b.machineLocked(), b.maintenance != nil)
}

// ejectPassively takes the backend out of service for failing real
// traffic, unless it is out already. It returns the window's counts that
// caused the ejection and the health the backend had before it.
func (b *Backend) ejectPassively(now time.Time, window time.Duration) (counts passive.Counts, before health.Health, ejected bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	before = b.machineLocked()
	if !passive.Ejectable(b.machineLocked(), b.maintenance != nil) {
		return passive.Counts{}, before, false
	}
	servedBefore := b.servedLocked()
	counts = b.passive.Eject(now, window)
	b.health = b.health.Eject()
	b.noteTransitionLocked(servedBefore, b.servedLocked(), now)
	return counts, before, true
}

// passivelyEjectable reports whether passive health may eject the backend
// now (passive.Ejectable).
func (b *Backend) passivelyEjectable() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return passive.Ejectable(b.machineLocked(), b.maintenance != nil)
}

// readmittedByProbes reports whether only probes can end a passive
// ejection of a backend with this health: it is probed, and its probe path
// has shown that it tells health apart (its vantage points probe a backend
// this replica watches, not this replica). Any other backend will never see
// the ok probes that readmission takes (its probe path refuses, or nothing
// probes it), so the elapsed window readmits it. The caller holds b.mu.
func (b *Backend) readmittedByProbes(h health.Health) bool {
	return b.Probe.Enabled && h.Verified && (b.fleet == nil || b.fleet.role != RoleWatcher)
}

// probesReadmit is readmittedByProbes of the backend's machine now.
func (b *Backend) probesReadmit() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.readmittedByProbes(b.health)
}

// readmitElapsed ends the passive ejection of a backend that probes cannot
// readmit (see readmittedByProbes) once window has elapsed since it. When
// the backend stays ejected for now, due says when it will be readmitted;
// it is zero otherwise.
func (b *Backend) readmitElapsed(now time.Time, window time.Duration) (readmitted bool, to health.State, due time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.health.Ejected || b.readmittedByProbes(b.health) {
		return false, b.health.State, time.Time{}
	}
	due = b.passive.ReadmitAt(window)
	if now.Before(due) {
		return false, b.health.State, due
	}
	before := b.servedLocked()
	b.health = b.health.Readmit()
	b.noteTransitionLocked(before, b.servedLocked(), now)
	return true, b.health.State, time.Time{}
}
