package pool

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/passive"
)

// This file holds what the pool tells operators beyond its numbers: the
// counts of the passive-health window, the fail-open changes and what a
// reload changed, as logs.

// windowCounts reads the passive-health window of b as it ends at now.
func (b *Backend) windowCounts(now time.Time, window time.Duration) passive.Counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.passive.Counts(now, window)
}

// noteFailOpen logs entering fail-open at warn level and leaving it at
// info, once per change. It runs after every state change and reload,
// the only events that can change fail-open, so selections pay nothing
// for it.
//
// Re-evaluating counts every backend, so state changes that come together
// share one: a change that finds a re-evaluation waiting to start leaves it
// to that one, which starts after the change and so sees it. Without that,
// a burst of changes (a start-up, an overloaded host timing out many
// probes) cost a count of the whole pool each, and at 5,000 backends this
// was over a quarter of the prober's CPU.
func (p *Pool) noteFailOpen() {
	if !p.failOpenPending.CompareAndSwap(false, true) {
		return
	}
	p.judgeMu.Lock()
	defer p.judgeMu.Unlock()
	p.failOpenPending.Store(false)
	p.failOpenLocked()
}

// failOpenLocked re-evaluates fail-open and logs a change. The caller
// holds judgeMu: the judgements that hold it already call this one.
func (p *Pool) failOpenLocked() {
	p.mu.RLock()
	configured, threshold := len(p.backends), p.settings.PanicThreshold
	inService := 0
	for _, b := range p.backends {
		if b.Served().InService() {
			inService++
		}
	}
	p.mu.RUnlock()
	on := failsOpen(inService, configured, threshold)
	if on == p.failOpen {
		return
	}
	p.failOpen = on
	if on {
		level.Warn(p.logger).Log("msg", "Pool fails open: too few backends in service, so every configured backend receives traffic",
			"in_service", inService, "configured", configured, "panic_threshold", threshold)
		return
	}
	level.Info(p.logger).Log("msg", "Pool no longer fails open: only backends in service receive traffic",
		"in_service", inService, "configured", configured, "panic_threshold", threshold)
}

// logChanges logs which backends a reload added, removed and changed (a
// new url, probe or client configuration), by name. Nothing is logged
// when the backends are the same.
func (p *Pool) logChanges(previous, current []*Backend) {
	old := make(map[string]*Backend, len(previous))
	for _, b := range previous {
		old[b.Name] = b
	}
	var added, changed, removed []string
	for _, b := range current {
		switch o, ok := old[b.Name]; {
		case !ok:
			added = append(added, b.Name)
		case o != b:
			changed = append(changed, b.Name)
		}
		delete(old, b.Name)
	}
	for name := range old {
		removed = append(removed, name)
	}
	if len(added)+len(changed)+len(removed) == 0 {
		return
	}
	slices.Sort(removed)
	level.Info(p.logger).Log("msg", "Backends changed", "added", someNames(added),
		"removed", someNames(removed), "changed", someNames(changed), "backends", len(current))
}

// maxLoggedNames bounds the names a change lists: a discovery source that
// swaps ten thousand backends costs a line of a few hundred bytes, not of
// a few hundred kilobytes.
const maxLoggedNames = 20

// someNames is the first maxLoggedNames names, comma-separated, and how
// many more there are.
func someNames(names []string) string {
	if len(names) <= maxLoggedNames {
		return strings.Join(names, ",")
	}
	return strings.Join(names[:maxLoggedNames], ",") + fmt.Sprintf(" and %d more", len(names)-maxLoggedNames)
}
