package pool

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/due"
	"github.com/probegate/probegate/collector/health"
)

// This file holds the pool's side of maintenance: the overlay that holds a
// backend out of service while an operator works on it. Which entries are
// in force is decided elsewhere (collector/maintenance, over a store that
// several replicas may share); the pool applies the entries it is given,
// ends them at their Until on its own clock, and offers the readiness
// budget that a new entry is judged against. It does no I/O.

// Maintenance is one backend's maintenance entry.
type Maintenance struct {
	// Backend is the name of the backend. An entry outlives a reload that
	// removes its backend, and applies again when the backend returns.
	Backend string `json:"backend"`
	// Reason says why, as the operator gave it.
	Reason string `json:"reason"`
	// Since is when the backend entered maintenance.
	Since time.Time `json:"since"`
	// Until is when the maintenance ends by itself; zero when it lasts
	// until it is ended.
	Until time.Time `json:"until,omitzero"`
	// By is who asked: the authenticated user or the client's address.
	By string `json:"by"`
}

// Expired reports whether the entry's ttl has run out at now.
func (m Maintenance) Expired(now time.Time) bool {
	return !m.Until.IsZero() && !now.Before(m.Until)
}

// ErrUnknownBackend is returned for a backend the pool does not have.
var ErrUnknownBackend = errors.New("no such backend")

// maintenanceEntries is the pool's side of maintenance. byName is guarded
// by the pool's mu.
type maintenanceEntries struct {
	byName map[string]Maintenance
	// due is the earliest Until, none when no entry expires.
	due due.Time
	// inUse is set once a store gave the pool its entries: maintenance is
	// a feature in use, and its series are exported from then on.
	inUse atomic.Bool
}

func newMaintenanceEntries() maintenanceEntries {
	return maintenanceEntries{byName: map[string]Maintenance{}}
}

// SetMaintenance makes entries the pool's maintenance entries, replacing
// every entry it had: backends named by a new entry enter maintenance,
// backends whose entry is gone leave it (a probed one must earn
// readmission), and entries already past their Until are dropped. The
// entries are the store's, so no budget is checked here: it was checked
// when each entry was stored.
func (p *Pool) SetMaintenance(entries []Maintenance) {
	p.maint.inUse.Store(true)
	now := p.now()
	next := make(map[string]Maintenance, len(entries))
	for _, m := range entries {
		if !m.Expired(now) {
			next[m.Backend] = m
		}
	}
	p.mu.Lock()
	for name := range p.maint.byName {
		if _, kept := next[name]; kept {
			continue
		}
		if b := p.backendLocked(name); b != nil {
			b.exitMaintenance("ended")
		}
	}
	p.maint.byName = next
	p.attachMaintenanceLocked()
	p.mu.Unlock()
	p.noteFailOpen()
}

// Maintenances returns every maintenance entry in force, sorted by
// backend, those of backends the pool does not have now included.
func (p *Pool) Maintenances() []Maintenance {
	p.catchUp(p.now())
	p.mu.RLock()
	defer p.mu.RUnlock()
	entries := make([]Maintenance, 0, len(p.maint.byName))
	for _, m := range p.maint.byName {
		entries = append(entries, m)
	}
	slices.SortFunc(entries, func(a, b Maintenance) int { return cmp.Compare(a.Backend, b.Backend) })
	return entries
}

// BudgetWith is the readiness budget the pool would have if entries were
// its maintenance entries, from its own probe-derived health, and whether
// the named backend would be in service by it (false when entries name
// it). It returns ErrUnknownBackend when the pool has no such backend.
// This is what a new entry is judged against: every stored entry counted,
// whatever this pool has applied so far.
func (p *Pool) BudgetWith(entries []Maintenance, name string) (b budget.Budget, inService bool, err error) {
	now := p.now()
	out := make(map[string]bool, len(entries))
	for _, m := range entries {
		if !m.Expired(now) {
			out[m.Backend] = true
		}
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	known, count := false, 0
	for _, be := range p.backends {
		in := !out[be.Name] && be.probeHealth().InService()
		if in {
			count++
		}
		if be.Name == name {
			known, inService = true, in
		}
	}
	if !known {
		return budget.Budget{}, false, ErrUnknownBackend
	}
	return budget.Compute(p.settings.Readiness, len(p.backends), count), inService, nil
}

// expireMaintenance ends the maintenances whose Until has come at now.
func (p *Pool) expireMaintenance(now time.Time) {
	if !p.maint.due.Reached(now) {
		return
	}
	p.mu.Lock()
	for name, m := range p.maint.byName {
		if !m.Expired(now) {
			continue
		}
		delete(p.maint.byName, name)
		if b := p.backendLocked(name); b != nil {
			b.exitMaintenance("expired")
		}
	}
	p.scheduleExpiryLocked()
	p.mu.Unlock()
	p.noteFailOpen()
}

// scheduleExpiryLocked sets due to the earliest Until. The caller holds mu.
func (p *Pool) scheduleExpiryLocked() {
	var next time.Time
	for _, m := range p.maint.byName {
		if u := m.Until; !u.IsZero() && (next.IsZero() || u.Before(next)) {
			next = u
		}
	}
	p.maint.due.Set(next)
	p.wakeRun()
}

// attachMaintenanceLocked puts every backend that has an entry in
// maintenance, after a reload or a new set of entries. The caller holds mu.
func (p *Pool) attachMaintenanceLocked() {
	for _, b := range p.backends {
		if m, ok := p.maint.byName[b.Name]; ok {
			b.enterMaintenance(m)
		}
	}
	p.scheduleExpiryLocked()
}

// maintenanceInUseLocked reports whether maintenance is a feature in use:
// a store gave the pool its entries (the admin API is on, or a state
// directory or a shared store is configured), or an entry exists. It stays
// so once it is, so that the maintenance series do not come and go with
// the entries.
func (p *Pool) maintenanceInUseLocked() bool {
	return p.maint.inUse.Load() || len(p.maint.byName) > 0
}

// backendLocked finds a backend by name. The caller holds mu.
func (p *Pool) backendLocked(name string) *Backend {
	for _, b := range p.backends {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// probeHealth is the backend's probe-derived health, maintenance aside.
func (b *Backend) probeHealth() health.Health {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.health
}

// observedLocked is the health the backend shows: the probe-derived one,
// in state maintenance while it is in maintenance. The caller holds mu.
func (b *Backend) observedLocked() health.Health {
	h := b.health
	switch {
	case b.maintenance != nil:
		h.State = health.StateMaintenance
	case b.outlier.Enforced():
		h.State = health.StateEjected
	}
	return h
}

// enterMaintenance sets the backend's maintenance entry (a backend already
// in maintenance takes the new entry's reason and until), logging the
// change once.
func (b *Backend) enterMaintenance(m Maintenance) {
	b.mu.Lock()
	before := b.observedLocked()
	entered := b.maintenance == nil
	if entered {
		after := before
		after.State = health.StateMaintenance
		b.noteTransitionLocked(before, after, b.clock())
	}
	b.maintenance = &m
	b.mu.Unlock()
	if entered {
		level.Info(b.logger).Log("msg", "Backend entered maintenance", "backend", b.Name, "url", b.URL,
			"from", before.State, "to", health.StateMaintenance, "reason", m.Reason, "by", m.By, "until", m.Until)
	}
}

// exitMaintenance clears the backend's maintenance entry. A probed backend
// must earn readmission from unhealthy; one that is not probed shows its
// probe-derived state at once.
func (b *Backend) exitMaintenance(why string) {
	b.mu.Lock()
	if b.maintenance == nil {
		b.mu.Unlock()
		return
	}
	before := b.observedLocked()
	b.maintenance = nil
	readmission := "at once: not probed"
	if b.Probe.Enabled {
		b.health = b.health.AfterMaintenance()
		readmission = fmt.Sprintf("after %d consecutive ok probes", b.Probe.Successes)
	}
	to := b.health.State
	b.noteTransitionLocked(before, b.health, b.clock())
	b.mu.Unlock()
	level.Info(b.logger).Log("msg", "Backend left maintenance", "backend", b.Name, "url", b.URL,
		"from", health.StateMaintenance, "to", to, "why", why, "readmission", readmission)
}

// logHiddenTransition logs, at debug level, a change of the probe-derived
// state of a backend in maintenance: the state it shows does not change.
func (b *Backend) logHiddenTransition(from, to health.State, r health.Result) {
	level.Debug(b.logger).Log("msg", "Probe-derived state changed during maintenance", "backend", b.Name,
		"url", b.URL, "probe_path", b.Probe.Path, "from", from, "to", to, "class", r.Class, "status", r.StatusCode)
}
