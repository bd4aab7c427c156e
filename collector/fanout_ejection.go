package collector

import (
	"context"
	"time"

	"github.com/go-kit/log/level"
)

// This file holds passive health's side of the fan-out: ejecting a backend
// that fails real traffic, and readmitting, when the window has elapsed,
// one that probes cannot bring back.

// eject ejects a backend whose window calls for it, unless that would put
// more than max_ejected_percent of the pool out, and logs the ejection.
func (f *Fanout) eject(b *Backend, s *fanoutSettings) {
	f.ejectMu.Lock()
	defer f.ejectMu.Unlock()
	ejected, configured, member := f.pool.ejectedCount(b)
	if !member || !ejectionAllowed(ejected, configured, s.passive.MaxEjectedPercent) {
		return
	}
	now := f.now()
	window := time.Duration(s.passive.Window)
	counts, before, ok := b.ejectPassively(now, window)
	if !ok {
		return
	}
	readmission := "probes"
	if !b.readmittedByProbes(before) {
		readmission = "window"
		due := now.Add(window).UnixNano()
		if current := f.readmitDue.Load(); current == 0 || due < current {
			f.readmitDue.Store(due)
			f.wakeReadmission()
		}
	}
	level.Warn(f.logger).Log("msg", "Backend ejected by passive health", "backend", b.Name, "url", b.URL,
		"from", before.State, "to", StateUnhealthy, "failures", counts.Failures, "requests", counts.Requests(),
		"window", window, "readmission", readmission)
}

// Run readmits the passively ejected backends that probes cannot readmit
// as soon as their window has elapsed, also when no fan-out round comes to
// notice it, until ctx is done. One Run, started once, serves the whole
// fan-out: it sleeps until the earliest readmission is due, and an ejection
// that schedules an earlier one, or a reload that changes the window, wakes
// it.
func (f *Fanout) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		var elapsed <-chan time.Time
		if due := f.readmitDue.Load(); due != 0 {
			// A due time already past fires at once.
			timer.Reset(time.Duration(due - f.now().UnixNano()))
			elapsed = timer.C
		} else {
			timer.Stop()
		}
		select {
		case <-ctx.Done():
			return
		case <-f.readmitWake:
		case <-elapsed:
			f.readmitElapsed(f.now(), time.Duration(f.settings.Load().passive.Window))
		}
	}
}

// wakeReadmission tells Run that readmitDue moved earlier. It never
// blocks: a signal already pending wakes Run just as well.
func (f *Fanout) wakeReadmission() {
	select {
	case f.readmitWake <- struct{}{}:
	default:
	}
}

// readmitElapsed readmits the ejected backends that probes cannot readmit
// (not probed, or never verified) once their window has elapsed, and sets
// readmitDue to the next one due. Until the earliest is due it costs one
// atomic load, so rounds can run it too.
func (f *Fanout) readmitElapsed(now time.Time, window time.Duration) {
	if due := f.readmitDue.Load(); due == 0 || now.UnixNano() < due {
		return
	}
	f.ejectMu.Lock()
	defer f.ejectMu.Unlock()
	var next int64
	for _, b := range f.pool.Backends() {
		readmitted, to, due := b.readmitElapsed(now, window)
		switch {
		case readmitted:
			level.Info(f.logger).Log("msg", "Backend readmitted by passive health: the window elapsed and no probe can show recovery",
				"backend", b.Name, "url", b.URL, "from", StateUnhealthy, "to", to, "window", window)
		case !due.IsZero() && (next == 0 || due.UnixNano() < next):
			next = due.UnixNano()
		}
	}
	f.readmitDue.Store(next)
}

// configuredCount is the number of configured backends.
func (p *Pool) configuredCount() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.backends)
}

// ejectedCount counts the passively ejected backends of the pool and its
// size, and reports whether b is still one of its backends (a reload may
// have replaced it).
func (p *Pool) ejectedCount(b *Backend) (ejected, configured int, member bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, o := range p.backends {
		if o == b {
			member = true
		}
		if o.Health().Ejected {
			ejected++
		}
	}
	return ejected, len(p.backends), member
}
