package pool

import (
	"sync"

	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/health"
)

// This file holds the probes that failed for a reason of probegate's own:
// out of descriptors, ports or memory. Such a failure is counted as the
// backend's probe with reason local and changes nothing else: not its
// state, its runs, its last result or its history, since a healthy
// backend would have failed it alike.

// localFaults are the causes of local probe failures already logged, so
// that each is logged once however many probes it fails.
type localFaults struct {
	logged sync.Map // cause string → struct{}
}

// first reports whether cause was not logged before, and marks it logged.
func (l *localFaults) first(cause string) bool {
	_, logged := l.logged.LoadOrStore(cause, struct{}{})
	return !logged
}

// recordLocalProbe counts a probe that failed for a reason of probegate's
// own, and logs its cause the first time the pool meets it.
func (b *Backend) recordLocalProbe(r health.Result, cause string) {
	b.mu.Lock()
	b.probes++
	b.failures[health.ReasonLocal]++
	b.mu.Unlock()
	if p := b.pool; p != nil && p.localFaults.first(cause) {
		level.Error(p.logger).Log("msg", "A probe failed for a reason of probegate's own; no backend's state changes (logged once per cause, counted in probegate_probe_failures_total{reason=\"local\"})",
			"cause", cause, "backend", b.Name, "url", b.URL, "err", r.Err)
	}
}
