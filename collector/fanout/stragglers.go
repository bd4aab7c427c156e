package fanout

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/fanout/internal/straggler"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

// This file is the round's waiting: it collects the backends' answers as
// they come and, with fanout.stragglers on, stops waiting for the
// backends its peers outrun (package straggler has the rule), and counts
// the backends cut.

// await waits for the round's answers as each backend's goroutine reports
// its index on done, until every backend has answered or, with a rule,
// until the rule says the round may answer without the rest. It returns
// which backends answered; those that did not are the stragglers cut.
// Reading an answer after its index arrived on done is safe: the
// goroutine wrote it before sending.
func (f *Fanout) await(done <-chan int, answers []backendAnswer, start time.Time, rule *straggler.Rule) (answered []bool) {
	answered = make([]bool, len(answers))
	var round *straggler.Round
	if rule != nil {
		round = straggler.NewRound(*rule, len(answers))
	}
	var cut *time.Timer
	var expired <-chan time.Time
	defer func() {
		if cut != nil {
			cut.Stop()
		}
	}()
	for left := len(answers); left > 0; {
		select {
		case i := <-done:
			answered[i] = true
			left--
			if round == nil || !answers[i].contributed {
				continue
			}
			round.Contributed(f.now().Sub(start))
			after, ok := round.CutAfter()
			if !ok {
				continue
			}
			wait := start.Add(after).Sub(f.now())
			if cut == nil {
				cut = time.NewTimer(wait)
				expired = cut.C
			} else {
				cut.Reset(wait)
			}
		case <-expired:
			return answered
		}
	}
	return answered
}

// cutStragglers cancels the backends that had not answered when the round
// stopped waiting, waits for their goroutines to return (they return
// promptly once cancelled, and must not outlive the round's buffers), and
// makes each a straggler's answer: no contribution, with the time the
// round gave it as its latency, counted per backend.
//
// A contribution that reached done together with the cut (the round's
// select picks either when both are ready) was whole before its backend
// was cancelled, so it is kept as an answer, not cut.
func (f *Fanout) cutStragglers(answered []bool, selected []*pool.Backend, answers []backendAnswer, done <-chan int, cancels []context.CancelFunc, start time.Time) {
	waited := f.now().Sub(start)
	running := 0
	for i, ok := range answered {
		if !ok && cancels != nil {
			cancels[i]()
			running++
		}
	}
	for range running {
		if i := <-done; answers[i].contributed {
			answered[i] = true
		}
	}
	for i, ok := range answered {
		if cancels != nil {
			cancels[i]()
		}
		if ok {
			continue
		}
		answers[i] = backendAnswer{backend: selected[i], outcome: traffic.Outcome{Erred: true, Reason: traffic.Straggler}, latency: waited}
		f.metrics.countStraggler(selected[i].Name)
	}
}

// stragglerCounts is probegate_fanout_stragglers_total{backend}: the
// rounds that stopped waiting for each backend. It is exported while the
// fan-out cuts stragglers.
type stragglerCounts = backendSeries[prometheus.Counter]

func newStragglerCounts() *stragglerCounts {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "probegate_fanout_stragglers_total",
		Help: "Fan-out rounds that answered without the backend because its peers had answered long before (fanout.stragglers).",
	}, []string{"backend"})
	return &stragglerCounts{vec: vec, with: vec.WithLabelValues, remove: vec.DeleteLabelValues,
		exported: func(c config.Fanout) bool { return c.Enabled && c.Stragglers.Enabled }}
}

// countStraggler counts a round cut without the backend. A nil *Metrics
// counts nothing.
func (m *Metrics) countStraggler(backend string) {
	if m != nil {
		m.stragglers.child(backend).Inc()
	}
}
