package pool

import (
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/outlier"
	"github.com/probegate/probegate/collector/pool/internal/due"
	"github.com/probegate/probegate/collector/traffic"
)

// This file is outlier detection's side of the pool: it feeds each
// backend's window with the rounds the fan-out hands over, judges the
// backends in service against each other as every round completes, and
// ejects an outlier (an overlay, as maintenance is) when the readiness
// budget allows, or records what it would do when not enforcing. The
// rules themselves are package outlier's.

// outlierPool is the pool's part: the judge's scratch space, guarded by
// judgeMu, the suppressions by reason and the next end of an ejection.
type outlierPool struct {
	judge     outlier.Judge
	summaries []outlier.Summary
	verdicts  []outlier.Verdict
	judged    []*Backend
	// available is the scratch space of the round's headcount;
	// judgedAt is the index of each judged backend.
	available  []bool
	judgedAt   []int
	suppressed [outlier.NumReasons]atomic.Uint64
	// due is the earliest end of an ejection, none when none is pending.
	due due.Time
}

// judgeRound adds a finished round to the outlier windows and judges the
// backends in service. Local outcomes and correlated failures say nothing
// about a backend and are left out.
func (p *Pool) judgeRound(samples []RoundSample) {
	// With detection off, the default, a round returns without judgeMu:
	// every fan-out round passes here on its client's request path, and
	// judgeMu is held by pool-wide work (fail-open counts, readmission
	// scans, a reload's window drops).
	p.mu.RLock()
	enabled := p.settings.Outlier.Enabled
	p.mu.RUnlock()
	if !enabled {
		return
	}
	// The settings are read again under judgeMu, so that a round cannot
	// fill a window again after a reload turning outlier detection off
	// dropped it (forgetUnusedWindows).
	p.judgeMu.Lock()
	defer p.judgeMu.Unlock()
	p.mu.RLock()
	cfg := p.settings.Outlier
	p.mu.RUnlock()
	if !cfg.Enabled {
		return
	}
	s := outlier.SettingsOf(cfg)
	now := p.now()
	for _, sample := range samples {
		if o := sample.Outcome; o.Reason == traffic.Local && o.Erred || o.Correlated {
			continue
		}
		sample.Backend.recordRound(now, s.Window, sample.Outcome.Failed, sample.Latency)
	}

	o := &p.outliers
	o.summaries, o.judged, o.judgedAt = o.summaries[:0], o.judged[:0], o.judgedAt[:0]
	p.mu.RLock()
	h := p.headcountLocked(p.heldOutLocked, o.available, func(i int, b *Backend, _ health.Served) {
		if sum, judged := b.outlierSummary(now, s); judged {
			o.summaries = append(o.summaries, sum)
			o.judged = append(o.judged, b)
			o.judgedAt = append(o.judgedAt, i)
		}
	})
	p.mu.RUnlock()
	o.available = h.available
	if cap(o.verdicts) < len(o.summaries) {
		o.verdicts = make([]outlier.Verdict, len(o.summaries))
	}
	o.verdicts = o.verdicts[:len(o.summaries)]
	o.judge.Run(o.summaries, s, o.verdicts)
	for i, v := range o.verdicts {
		if !v.Outlier {
			continue
		}
		b, at := o.judged[i], o.judgedAt[i]
		if floor, ok := h.floor(at); cfg.Enforcing && !ok {
			p.suppressOutlier(b, v, now, s, floor)
			continue
		}
		if p.ejectOutlier(b, v, now, s, cfg.Enforcing) && cfg.Enforcing {
			h.remove(at)
		}
	}
}

// ejectOutlier ejects b for verdict v, or records that a dry run would.
func (p *Pool) ejectOutlier(b *Backend, v outlier.Verdict, now time.Time, s outlier.Settings, enforce bool) bool {
	b.mu.Lock()
	before := b.servedLocked()
	e, ok := b.outlier.Eject(now, v.Reason, s, enforce)
	if ok && enforce {
		b.noteTransitionLocked(before, b.servedLocked(), now)
	}
	b.mu.Unlock()
	if !ok {
		return false
	}
	p.scheduleOutlierReadmission(e.Until)
	keyvals := []any{"backend", b.Name, "url", b.URL, "reason", v.Reason, "value", v.Value, "peer_median", v.PeerMedian,
		"ejection", e.Until.Sub(e.Since), "consecutive", e.Multiplier}
	if !enforce {
		level.Warn(p.logger).Log(append([]any{"msg", "Outlier detection would eject the backend (dry run: nothing changes)"}, keyvals...)...)
		return true
	}
	level.Warn(p.logger).Log(append([]any{"msg", "Backend ejected by outlier detection", "from", before.State(), "to", health.ServedEjected}, keyvals...)...)
	p.failOpenLocked()
	return true
}

// suppressOutlier records an ejection the readiness budget, or its
// group's, did not allow, once a window per backend.
func (p *Pool) suppressOutlier(b *Backend, v outlier.Verdict, now time.Time, s outlier.Settings, floor floor) {
	b.mu.Lock()
	first := b.outlier.Suppress(now, s.Window)
	b.mu.Unlock()
	if !first {
		return
	}
	p.outliers.suppressed[v.Reason].Add(1)
	refusing, numbers := floor.refusal()
	level.Warn(p.logger).Log(append([]any{"msg", "Outlier detection did not eject the backend: " + refusing + " allows no disruption",
		"backend", b.Name, "url", b.URL, "reason", v.Reason, "value", v.Value, "peer_median", v.PeerMedian}, numbers...)...)
}

// scheduleOutlierReadmission makes sure a readmission scan runs at until.
func (p *Pool) scheduleOutlierReadmission(until time.Time) {
	if p.outliers.due.Lower(until) {
		p.wakeRun()
	}
}

// readmitOutliers ends the ejections that are over and need no
// more ok probes.
func (p *Pool) readmitOutliers(now time.Time) {
	if !p.outliers.due.Reached(now) {
		return
	}
	p.mu.RLock()
	backends := p.backends
	p.mu.RUnlock()
	var next time.Time
	for _, b := range backends {
		if until, pending := b.readmitOutlier(now); pending && (next.IsZero() || until.Before(next)) {
			next = until
		}
	}
	p.outliers.due.Set(time.Time{})
	if !next.IsZero() {
		p.scheduleOutlierReadmission(next)
	}
}

// recordRound adds one round to the backend's window.
func (b *Backend) recordRound(now time.Time, window time.Duration, failed bool, latency time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.outlier.Record(now, window, failed, latency)
}

// outlierSummary is the backend's window for judging, and whether it is
// judged: in service and not ejected, also by a dry run.
func (b *Backend) outlierSummary(now time.Time, s outlier.Settings) (sum outlier.Summary, judged bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	sum, judged = b.outlier.Summary(now, s)
	return sum, judged && b.servedLocked().InService()
}

// outlierProbeLocked counts a probe toward the readmission of an ejected
// backend, and readmits it once the ejection is over. The caller holds
// b.mu; readmitted says whether the shown state changed.
func (b *Backend) outlierProbeLocked(r health.Result, now time.Time) (readmitted bool) {
	return b.outlier.Probe(r.Class == health.ClassOK) && b.readmitOutlierLocked(now)
}

// readmitOutlier readmits the backend when its ejection is over and,
// for a backend probes can vouch for, followed by successes ok probes.
// pending is set, with its end, for an ejection not yet over.
func (b *Backend) readmitOutlier(now time.Time) (until time.Time, pending bool) {
	b.mu.Lock()
	if until, pending := b.outlier.Pending(now); pending {
		b.mu.Unlock()
		return until, true
	}
	readmitted := b.readmitOutlierLocked(now)
	b.mu.Unlock()
	if readmitted {
		b.transitioned()
	}
	return time.Time{}, false
}

// readmitOutlierLocked ends an ejection that is over when no probe can
// vouch for the backend (it is not probed, or its probe path never showed
// it tells health apart) or health_probe.successes ok probes in a row
// have. The caller holds b.mu and calls transitioned when it reports true.
func (b *Backend) readmitOutlierLocked(now time.Time) (readmitted bool) {
	okProbes := 0
	if b.readmittedByProbes(b.health) {
		okProbes = b.Probe.Successes
	}
	before := b.servedLocked()
	ended, enforced := b.outlier.Readmit(now, okProbes)
	switch {
	case !ended:
		return false
	case !enforced:
		level.Info(b.logger).Log("msg", "Outlier detection would readmit the backend (dry run)", "backend", b.Name, "url", b.URL)
		return false
	}
	after := b.servedLocked()
	b.noteTransitionLocked(before, after, now)
	level.Info(b.logger).Log("msg", "Backend readmitted by outlier detection", "backend", b.Name, "url", b.URL,
		"from", health.ServedEjected, "to", after.State(), "ok_probes", b.outlier.OKProbes())
	return true
}

// suppressed counts the outlier ejections the readiness budget did not
// allow, by reason.
func (p *Pool) suppressed() [outlier.NumReasons]uint64 {
	var out [outlier.NumReasons]uint64
	for i := range out {
		out[i] = p.outliers.suppressed[i].Load()
	}
	return out
}
