package pool

import (
	"time"

	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"

	"github.com/probegate/probegate/collector/passive"
)

// This file holds passive health's side of the pool: counting what real
// traffic did to a backend, ejecting a backend that fails it, and
// readmitting, when the window has elapsed, one that probes cannot bring
// back.

// RecordTraffic counts the outcome of one fan-out request to the backend
// and, with passive health on, ejects it when its window calls for it and
// its pool can spare it (max_ejected_percent). It is the fan-out's way in,
// as RecordProbe is the prober's. It does not allocate unless it ejects.
func (b *Backend) RecordTraffic(o traffic.Outcome) {
	p := b.pool
	if p == nil {
		b.recordTraffic(o, time.Now(), config.PassiveHealth{})
		return
	}
	p.mu.RLock()
	rules := p.settings.Passive
	p.mu.RUnlock()
	if b.recordTraffic(o, p.now(), rules) {
		p.eject(b, rules)
	}
}

// eject ejects a backend whose window calls for it, unless that would put
// more than max_ejected_percent of the pool out, and logs the ejection.
func (p *Pool) eject(b *Backend, rules config.PassiveHealth) {
	p.judgeMu.Lock()
	defer p.judgeMu.Unlock()
	ejected, configured, member := p.ejectedCount(b)
	if !member || !passive.EjectionAllowed(ejected, configured, rules.MaxEjectedPercent) {
		return
	}
	now := p.now()
	window := time.Duration(rules.Window)
	counts, before, ok := b.ejectPassively(now, window)
	if !ok {
		return
	}
	readmission := "probes"
	if !b.readmittedByProbes(before) {
		readmission = "window"
		if p.readmitDue.Lower(now.Add(window)) {
			p.wakeRun()
		}
	}
	level.Warn(p.logger).Log("msg", "Backend ejected by passive health", "backend", b.Name, "url", b.URL,
		"from", before.State, "to", health.StateUnhealthy, "verified", before.Verified,
		"failures", counts.Failures, "requests", counts.Requests(), "window", window, "readmission", readmission)
	p.failOpenLocked()
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

// readmitElapsed readmits the ejected backends that probes cannot readmit
// (not probed, or never verified) once their window has elapsed, and sets
// readmitDue to the next one due.
func (p *Pool) readmitElapsed(now time.Time) {
	if !p.readmitDue.Reached(now) {
		return
	}
	p.judgeMu.Lock()
	defer p.judgeMu.Unlock()
	p.mu.RLock()
	window := time.Duration(p.settings.Passive.Window)
	backends := p.backends
	p.mu.RUnlock()
	var next time.Time
	changed := false
	for _, b := range backends {
		readmitted, to, due := b.readmitElapsed(now, window)
		switch {
		case readmitted:
			changed = true
			level.Info(p.logger).Log("msg", "Backend readmitted by passive health: the window elapsed and no probe can show recovery",
				"backend", b.Name, "url", b.URL, "from", health.StateUnhealthy, "to", to, "window", window)
		case !due.IsZero() && (next.IsZero() || due.Before(next)):
			next = due
		}
	}
	p.readmitDue.Set(next)
	if changed {
		p.failOpenLocked()
	}
}
