package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/health"
)

// This file holds maintenance: an operator taking a backend out of service
// under the readiness budget, the way a Kubernetes eviction respects a
// PodDisruptionBudget (docs/design.md, "Maintenance"). The pool keeps the
// entries and offers them to whoever persists them; it does no file I/O.

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
	// By is who asked: the basic-auth user or the client address.
	By string `json:"by"`
}

// Expired reports whether the entry's ttl has run out at now.
func (m Maintenance) Expired(now time.Time) bool {
	return !m.Until.IsZero() && !now.Before(m.Until)
}

// ErrUnknownBackend is returned for a backend the pool does not have.
var ErrUnknownBackend = errors.New("no such backend")

// BudgetError refuses a maintenance that the readiness budget does not
// allow: the backend is in service and no disruption is allowed.
type BudgetError struct {
	Budget Budget
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("the readiness budget allows no disruption: expected=%d current_healthy=%d desired_healthy=%d disruptions_allowed=%d",
		e.Budget.Expected, e.Budget.CurrentHealthy, e.Budget.DesiredHealthy, e.Budget.DisruptionsAllowed)
}

// maintenanceEntries is the pool's side of maintenance. byName is guarded
// by the pool's mu; saving is serialised by saveMu.
type maintenanceEntries struct {
	byName map[string]Maintenance
	// version counts the changes to byName; saved is the version the save
	// hook last stored.
	version uint64
	saveMu  sync.Mutex
	saved   uint64
	save    func([]Maintenance) error
	// due is the Unix time in nanoseconds of the earliest Until, 0 when no
	// entry expires. Reads before it skip the expiry scan.
	due atomic.Int64
	// wake tells RunMaintenance that something changed.
	wake chan struct{}
}

func newMaintenanceEntries() maintenanceEntries {
	return maintenanceEntries{byName: map[string]Maintenance{}, wake: make(chan struct{}, 1)}
}

// OnMaintenanceChange sets the function that stores the entries after a
// change. It is called with every entry, sorted by backend, one call at a
// time, never under the pool's lock. Set it before serving.
func (p *Pool) OnMaintenanceChange(save func([]Maintenance) error) {
	p.maint.saveMu.Lock()
	defer p.maint.saveMu.Unlock()
	p.maint.save = save
}

// RestoreMaintenance adds stored entries, for example at start-up; expired
// ones are dropped. Backends in the pool named by an entry enter
// maintenance at once, without a budget check: the budget was checked
// when the entry was made.
func (p *Pool) RestoreMaintenance(entries []Maintenance) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range entries {
		if m.Expired(now) {
			// The stored entries change only when one is dropped.
			p.maint.version++
			continue
		}
		p.maint.byName[m.Backend] = m
	}
	p.attachMaintenanceLocked()
}

// Maintenances returns every maintenance entry, sorted by backend, those
// of backends the pool does not have now included.
func (p *Pool) Maintenances() []Maintenance {
	p.expireMaintenance(p.now())
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.maintenancesLocked()
}

func (p *Pool) maintenancesLocked() []Maintenance {
	entries := make([]Maintenance, 0, len(p.maint.byName))
	for _, m := range p.maint.byName {
		entries = append(entries, m)
	}
	slices.SortFunc(entries, func(a, b Maintenance) int { return cmp.Compare(a.Backend, b.Backend) })
	return entries
}

// EnterMaintenance puts the backend m.Backend in maintenance with m's
// reason, until and by; Since is set here (a backend already in
// maintenance keeps its own). When the backend is in service and the
// readiness budget allows no disruption it returns a *BudgetError and
// nothing changes, unless force is set. The budget check and the change
// are one step under the pool's lock, so concurrent requests cannot both
// pass a budget that allows one. It returns the budget after the change
// and whether force overrode the budget.
func (p *Pool) EnterMaintenance(m Maintenance, force bool) (after Budget, forced bool, err error) {
	now := p.now()
	p.expireMaintenance(now)
	p.mu.Lock()
	b := p.backendLocked(m.Backend)
	if b == nil {
		p.mu.Unlock()
		return Budget{}, false, ErrUnknownBackend
	}
	before := p.budgetLocked()
	if b.Health().InService() && before.DisruptionsAllowed == 0 {
		if !force {
			p.mu.Unlock()
			return before, false, &BudgetError{Budget: before}
		}
		forced = true
	}
	m.Since = now
	if old, ok := p.maint.byName[m.Backend]; ok {
		m.Since = old.Since
	}
	p.maint.byName[m.Backend] = m
	p.maint.version++
	from := b.enterMaintenance(m)
	p.scheduleExpiryLocked()
	after = p.budgetLocked()
	p.mu.Unlock()
	p.noteFailOpen()

	keyvals := []any{"backend", b.Name, "url", b.URL, "from", from, "to", health.StateMaintenance,
		"reason", m.Reason, "by", m.By, "until", m.Until, "forced", forced,
		"current_healthy", after.CurrentHealthy, "desired_healthy", after.DesiredHealthy}
	if forced {
		level.Warn(p.logger).Log(append([]any{"msg", "Backend forced into maintenance against the readiness budget"}, keyvals...)...)
	} else {
		level.Info(p.logger).Log(append([]any{"msg", "Backend entered maintenance"}, keyvals...)...)
	}
	return after, forced, p.saveMaintenance()
}

// ExitMaintenance ends the maintenance of the named backend. A probed
// backend stays out of service until its probes earn readmission; one
// that is not probed returns to its probe-derived state at once. The
// entry of a backend the pool does not have now is dropped. It returns
// ErrUnknownBackend when there is neither such a backend nor an entry, and
// whether there was an entry.
func (p *Pool) ExitMaintenance(name string) (existed bool, err error) {
	p.expireMaintenance(p.now())
	p.mu.Lock()
	b := p.backendLocked(name)
	_, existed = p.maint.byName[name]
	if b == nil && !existed {
		p.mu.Unlock()
		return false, ErrUnknownBackend
	}
	if existed {
		delete(p.maint.byName, name)
		p.maint.version++
		p.scheduleExpiryLocked()
		if b != nil {
			b.exitMaintenance("ended")
		}
	}
	p.mu.Unlock()
	p.noteFailOpen()
	if !existed {
		return false, nil
	}
	return true, p.saveMaintenance()
}

// RunMaintenance ends maintenances whose ttl ran out, also when no read of
// the pool comes to notice it, and saves the entries after every change
// that was not saved yet, until ctx is done. One timer serves every
// backend.
func (p *Pool) RunMaintenance(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		if _, done := p.waitDue(ctx, timer, &p.maint.due, p.maint.wake); done {
			return
		}
		p.expireMaintenance(p.now())
		if err := p.saveMaintenance(); err != nil {
			level.Error(p.logger).Log("msg", "Cannot save the maintenance entries", "err", err)
		}
	}
}

// expireMaintenance ends the maintenances whose ttl ran out at now. Until
// the earliest is due it costs one atomic load, so every read runs it.
func (p *Pool) expireMaintenance(now time.Time) {
	if due := p.maint.due.Load(); due == 0 || now.UnixNano() < due {
		return
	}
	p.mu.Lock()
	for name, m := range p.maint.byName {
		if !m.Expired(now) {
			continue
		}
		delete(p.maint.byName, name)
		p.maint.version++
		if b := p.backendLocked(name); b != nil {
			b.exitMaintenance("expired")
		}
	}
	p.scheduleExpiryLocked()
	p.wakeMaintenance()
	p.mu.Unlock()
	p.noteFailOpen()
}

// scheduleExpiryLocked sets due to the earliest Until. The caller holds mu.
func (p *Pool) scheduleExpiryLocked() {
	var next int64
	for _, m := range p.maint.byName {
		if u := m.Until; !u.IsZero() && (next == 0 || u.UnixNano() < next) {
			next = max(u.UnixNano(), 1)
		}
	}
	p.maint.due.Store(next)
	p.wakeMaintenance()
}

func (p *Pool) wakeMaintenance() {
	select {
	case p.maint.wake <- struct{}{}:
	default:
	}
}

// saveMaintenance hands the entries to the save hook when they changed
// since it last stored them. The entries are read under saveMu, so the
// last save always holds the latest entries.
func (p *Pool) saveMaintenance() error {
	p.maint.saveMu.Lock()
	defer p.maint.saveMu.Unlock()
	if p.maint.save == nil {
		return nil
	}
	p.mu.RLock()
	version, entries := p.maint.version, p.maintenancesLocked()
	p.mu.RUnlock()
	if version == p.maint.saved {
		return nil
	}
	if err := p.maint.save(entries); err != nil {
		return err
	}
	p.maint.saved = version
	return nil
}

// attachMaintenanceLocked puts every backend that has an entry in
// maintenance, after a reload or a restore. The caller holds mu.
func (p *Pool) attachMaintenanceLocked() {
	for _, b := range p.backends {
		if m, ok := p.maint.byName[b.Name]; ok {
			b.enterMaintenance(m)
		}
	}
	p.scheduleExpiryLocked()
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

// budgetLocked is Budget for a caller that holds mu.
func (p *Pool) budgetLocked() Budget {
	inService := 0
	for _, b := range p.backends {
		if b.Health().InService() {
			inService++
		}
	}
	return ComputeBudget(p.settings.Readiness, len(p.backends), inService)
}

// observedLocked is the health the backend shows: the probe-derived one,
// in state maintenance while it is in maintenance. The caller holds mu.
func (b *Backend) observedLocked() health.Health {
	h := b.health
	if b.maintenance != nil {
		h.State = health.StateMaintenance
	}
	return h
}

// enterMaintenance sets the backend's maintenance entry and returns the
// state it showed before.
func (b *Backend) enterMaintenance(m Maintenance) (from health.State) {
	b.mu.Lock()
	before := b.observedLocked()
	if b.maintenance == nil {
		after := before
		after.State = health.StateMaintenance
		b.noteTransitionLocked(before, after, b.clock())
	}
	b.maintenance = &m
	b.mu.Unlock()
	return before.State
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
