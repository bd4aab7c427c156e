package pool

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"

	"github.com/probegate/probegate/collector/passive"
)

// This file holds passive health's side of the pool: counting what real
// traffic did to a backend, ejecting a backend that fails it, and
// readmitting, when the window has elapsed, one that probes cannot bring
// back.

// RecordTraffic counts the outcome of one fan-out request to b and, with
// passive health on, ejects b when its window calls for it and the pool can
// spare it (max_ejected_percent). It does not allocate unless it ejects.
func (p *Pool) RecordTraffic(b *Backend, o Outcome) {
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
	p.ejectMu.Lock()
	defer p.ejectMu.Unlock()
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
		due := dueNanos(now.Add(window))
		if current := p.readmitDue.Load(); current == 0 || due < current {
			p.readmitDue.Store(due)
			p.wakeReadmission()
		}
	}
	level.Warn(p.logger).Log("msg", "Backend ejected by passive health", "backend", b.Name, "url", b.URL,
		"from", before.State, "to", health.StateUnhealthy, "verified", before.Verified,
		"failures", counts.Failures, "requests", counts.Requests(), "window", window, "readmission", readmission)
	p.noteFailOpen()
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

// Run readmits the passively ejected backends that probes cannot readmit
// as soon as their window has elapsed, also when no fan-out round comes to
// notice it, until ctx is done. It sleeps until the earliest readmission is
// due; an ejection that schedules an earlier one, or a reload that changes
// the window, wakes it.
func (p *Pool) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		elapsed, done := p.waitDue(ctx, timer, &p.readmitDue, p.readmitWake)
		if done {
			return
		}
		if elapsed {
			p.readmitElapsed(p.now())
		}
	}
}

// waitDue waits for the Unix time in nanoseconds that due holds (none when
// it holds 0), a signal on wake, or the end of ctx, and says which: a due
// time already past fires at once. It is the one timer loop of the pool's
// background work, so that no backend needs a goroutine or timer of its
// own; the callers load due afresh each time round.
func (p *Pool) waitDue(ctx context.Context, timer *time.Timer, due *atomic.Int64, wake <-chan struct{}) (elapsed, done bool) {
	var fired <-chan time.Time
	if at := due.Load(); at != 0 {
		timer.Reset(time.Duration(at - p.now().UnixNano()))
		fired = timer.C
	} else {
		timer.Stop()
	}
	select {
	case <-ctx.Done():
		return false, true
	case <-wake:
		return false, false
	case <-fired:
		return true, false
	}
}

// wakeReadmission tells Run that readmitDue moved earlier. It never
// blocks: a signal already pending wakes Run just as well.
func (p *Pool) wakeReadmission() {
	select {
	case p.readmitWake <- struct{}{}:
	default:
	}
}

// readmitElapsed readmits the ejected backends that probes cannot readmit
// (not probed, or never verified) once their window has elapsed, and sets
// readmitDue to the next one due. Until the earliest is due it costs one
// atomic load, so every selection runs it too.
func (p *Pool) readmitElapsed(now time.Time) {
	if due := p.readmitDue.Load(); due == 0 || now.UnixNano() < due {
		return
	}
	p.ejectMu.Lock()
	defer p.ejectMu.Unlock()
	p.mu.RLock()
	window := time.Duration(p.settings.Passive.Window)
	backends := p.backends
	p.mu.RUnlock()
	var next int64
	changed := false
	for _, b := range backends {
		readmitted, to, due := b.readmitElapsed(now, window)
		switch {
		case readmitted:
			changed = true
			level.Info(p.logger).Log("msg", "Backend readmitted by passive health: the window elapsed and no probe can show recovery",
				"backend", b.Name, "url", b.URL, "from", health.StateUnhealthy, "to", to, "window", window)
		case !due.IsZero() && (next == 0 || dueNanos(due) < next):
			next = dueNanos(due)
		}
	}
	p.readmitDue.Store(next)
	if changed {
		p.noteFailOpen()
	}
}
