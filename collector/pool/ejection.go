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

// chargeTraffic counts the outcome of one fan-out request to the backend
// and, with passive health on, ejects it when its window calls for it and
// its pool can spare it (max_ejected_percent). RecordRound calls it for
// each backend of a round. It does not allocate unless it ejects.
func (b *Backend) chargeTraffic(o traffic.Outcome) {
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
// more than max_ejected_percent of the pool out or take the pool below
// the readiness budget's desired_healthy, and logs the ejection or its
// suppression.
func (p *Pool) eject(b *Backend, rules config.PassiveHealth) {
	p.judgeMu.Lock()
	defer p.judgeMu.Unlock()
	c := p.census(b)
	if !c.member || !c.ejectable || !passive.EjectionAllowed(c.ejected, len(c.backends), rules.MaxEjectedPercent) {
		return
	}
	now := p.now()
	window := time.Duration(rules.Window)
	if floor, ok := c.floor(c.at); !ok {
		p.suppressPassive(b, now, window, floor)
		return
	}
	counts, before, ok := b.ejectPassively(now, window)
	if !ok {
		return
	}
	readmission := "probes"
	if !b.probesReadmit() {
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

// census is what a passive ejection of one backend is judged by: the
// pool's headcount (the floor every ejector reads), its backends
// passively ejected, and whether b is still one of its backends (a
// reload may have replaced it), at index at, and one passive health may
// eject.
type census struct {
	headcount
	ejected, at       int
	member, ejectable bool
}

// census counts the pool for a passive ejection of b. The caller holds
// judgeMu.
func (p *Pool) census(b *Backend) census {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var c census
	c.headcount = p.headcountLocked(p.heldOutLocked, nil, func(i int, o *Backend, _ health.Served) {
		if o == b {
			c.at, c.member = i, true
			c.ejectable = b.passivelyEjectable()
		}
		if o.Health().Ejected {
			c.ejected++
		}
	})
	return c
}

// suppressPassive records a passive ejection the readiness budget, or its
// group's, did not allow: counted and logged once a window per backend.
func (p *Pool) suppressPassive(b *Backend, now time.Time, window time.Duration, floor floor) {
	b.mu.Lock()
	first := b.passive.Suppress(now, window)
	counts := b.passive.Counts(now, window)
	b.mu.Unlock()
	if !first {
		return
	}
	p.passiveSuppressed.Add(1)
	refusing, numbers := floor.refusal()
	level.Warn(p.logger).Log(append([]any{"msg", "Passive health did not eject the backend: " + refusing + " allows no disruption",
		"backend", b.Name, "url", b.URL, "failures", counts.Failures, "requests", counts.Requests(), "window", window}, numbers...)...)
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
