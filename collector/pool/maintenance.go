package pool

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool/internal/due"
)

// This file holds the pool's side of maintenance: the overlay that holds a
// backend out of service while an operator works on it. Which entries are
// in force is decided elsewhere (collector/maintenance, over a store that
// several replicas may share); the pool applies the entries it is given
// (an entries.Set), ends by its clock those that entries' rule says a
// clock ends (the file store's, never a shared store's), and offers
// the readiness budget that a new entry is judged against. It does no I/O.

// ErrUnknownBackend is returned for a backend the pool does not have.
var ErrUnknownBackend = errors.New("no such backend")

// maintenanceEntries is the pool's side of maintenance. set is guarded
// by the pool's mu.
type maintenanceEntries struct {
	set entries.Set
	// due is the earliest end by the clock, none when no entry has one.
	due due.Time
	// inUse is set once a store gave the pool its entries: maintenance is
	// a feature in use, and its series are exported from then on.
	inUse atomic.Bool
	// admitted counts, by backend, the maintenance requests admitted by
	// AdmitMaintenance whose entry is not applied yet. It is guarded by
	// judgeMu: the ejectors count these backends out of service, so that
	// a request and an ejection cannot both spend the last disruption
	// while the request's entry is on its way through the store.
	admitted map[string]int
}

// SetMaintenance makes entries the pool's maintenance entries, their ttls
// measured by k, replacing every entry it had: backends named by a new
// entry enter maintenance, backends whose entry is gone leave it (a probed
// one must earn readmission), and entries no longer in force are dropped.
// The entries are the store's, so no budget is checked here: it was
// checked when each entry was stored.
func (p *Pool) SetMaintenance(in []entries.Entry, k entries.Keeper) {
	p.maint.inUse.Store(true)
	now := p.now()
	// judgeMu orders the change against the ejections' judgements, which
	// count the entries in force between counting and ejecting.
	p.judgeMu.Lock()
	defer p.judgeMu.Unlock()
	p.mu.Lock()
	for _, name := range p.maint.set.Replace(in, k, now) {
		if b := p.backendLocked(name); b != nil {
			b.exitMaintenance("ended")
		}
	}
	p.attachMaintenanceLocked()
	p.mu.Unlock()
	p.failOpenLocked()
}

// Maintenances returns every maintenance entry in force, sorted by
// backend, those of backends the pool does not have now included.
func (p *Pool) Maintenances() []entries.Entry {
	p.catchUp(p.now())
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.maint.set.Sorted()
}

// BudgetWith is the readiness budget the pool would have if entries, the
// entries in force as their owner judged them (collector/maintenance, by
// entries' rule), were its maintenance entries, from its own probe-derived
// health, and whether the named backend would be in service by it (false
// when entries name it). It returns ErrUnknownBackend when the pool has no
// such backend. It counts as /ready does, an unknown backend in service:
// it is the budget a granted entry leaves. A new entry is judged by
// AdmitMaintenance, which counts verdicts only.
func (p *Pool) BudgetWith(in []entries.Entry, name string) (b budget.Budget, inService bool, err error) {
	out := backendsNamed(in)
	p.mu.RLock()
	defer p.mu.RUnlock()
	known := false
	b = p.budgetLocked(func(be *Backend) bool { return out[be.Name] }, false, func(_ int, be *Backend, in bool, _ health.Served) {
		if be.Name == name {
			known, inService = true, in
		}
	})
	if !known {
		return budget.Budget{}, false, ErrUnknownBackend
	}
	return b, inService, nil
}

// Admission is the pool's judgement of a maintenance request, with every
// stored entry counted, whatever this pool has applied so far.
type Admission struct {
	// Budget counts as in service only the backends with a verdict
	// (healthy, or probe_unsupported), and those that are not probed:
	// a backend still unknown does not count, whatever routing does
	// with it.
	Budget budget.Budget
	// InService reports whether the named backend is in service now, as
	// routing serves it (an unknown backend is): a grant takes it out.
	InService bool
	// Awaited is what the judgement waits for; until it is None the
	// budget is not the pool's, and the request should not be granted
	// unless forced.
	Awaited Awaited
	// Group is the budget of the named backend's replica group, counted
	// alike (readiness.per_group); Group.Budgeted is false when the
	// group has none.
	Group budget.Group
}

// AdmitMaintenance judges a new entry of the named backend with the
// entries in force, under the same lock as the ejections, and it holds
// the backend out of the ejections' count from then until release is
// called: the caller stores the entry (I/O, under no pool lock) and calls
// release once the pool applied it, or once it gave up. Without that
// hold, an ejection judged between this judgement and SetMaintenance
// would spend the same last disruption. Other admitted requests do not
// count here: the store's compare-and-swap orders those. release may be
// called more than once; it is not nil when err is nil. It returns
// ErrUnknownBackend when the pool has no such backend.
func (p *Pool) AdmitMaintenance(in []entries.Entry, name string) (a Admission, release func(), err error) {
	p.judgeMu.Lock()
	defer p.judgeMu.Unlock()
	a, err = p.admission(in, name)
	if err != nil {
		return a, nil, err
	}
	if p.maint.admitted == nil {
		p.maint.admitted = make(map[string]int)
	}
	p.maint.admitted[name]++
	var once sync.Once
	release = func() {
		once.Do(func() {
			p.judgeMu.Lock()
			defer p.judgeMu.Unlock()
			if p.maint.admitted[name]--; p.maint.admitted[name] <= 0 {
				delete(p.maint.admitted, name)
			}
		})
	}
	return a, release, nil
}

// admission counts the pool for AdmitMaintenance by the headcount every
// ejector's floor reads too: the budget, the named backend, its replica
// group, and what is awaited.
func (p *Pool) admission(in []entries.Entry, name string) (Admission, error) {
	out := backendsNamed(in)
	held := func(be *Backend) bool { return out[be.Name] }
	p.mu.RLock()
	defer p.mu.RUnlock()
	var a Admission
	at := -1
	h := p.headcountLocked(held, nil, func(i int, be *Backend, s health.Served) {
		if be.Name == name {
			at, a.InService = i, !held(be) && s.InService()
		}
	})
	if at < 0 {
		return Admission{}, ErrUnknownBackend
	}
	a.Budget, a.Group = h.budget(), h.group(at, false)
	a.Awaited = p.awaitedLocked(held)
	return a, nil
}

// backendsNamed is the set of backends that the entries in force, as
// their owner judged them, name.
func backendsNamed(in []entries.Entry) map[string]bool {
	out := make(map[string]bool, len(in))
	for _, m := range in {
		out[m.Backend] = true
	}
	return out
}

// heldOutLocked reports whether the ejectors count the backend out of
// service for maintenance: it has an entry in force, or a request for
// one was admitted and its entry is not applied yet. The caller holds
// judgeMu and mu.
func (p *Pool) heldOutLocked(b *Backend) bool {
	return p.inMaintenanceLocked(b) || p.admittedLocked(b)
}

// budgetLocked is the one count of the readiness budget, which /ready,
// a maintenance request and the ejectors' floors are all judged by: a
// backend counts as in service when it is not in maintenance (by
// inMaintenance), no outlier ejection holds it out, and its
// probe-derived health (in which passive health's ejections are) is in
// service. With verdictsOnly, a backend that awaits its first verdict
// does not count: that is the headcount a disruption is judged by
// (headcountLocked). seen, when set, is told each backend with its
// index, whether it counts, and what it is served as bar maintenance.
// The caller holds mu.
func (p *Pool) budgetLocked(inMaintenance func(*Backend) bool, verdictsOnly bool, seen func(int, *Backend, bool, health.Served)) budget.Budget {
	count := 0
	for i, be := range p.backends {
		s := be.servedBarMaintenance()
		in := !inMaintenance(be) && s.InService() && !(verdictsOnly && be.awaitsVerdict(s))
		if in {
			count++
		}
		if seen != nil {
			seen(i, be, in, s)
		}
	}
	return budget.Compute(p.settings.Readiness, len(p.backends), count)
}

// inMaintenanceLocked reports whether the backend has an entry in force
// here. The caller holds mu.
func (p *Pool) inMaintenanceLocked(b *Backend) bool {
	_, ok := p.maint.set.Get(b.Name)
	return ok
}

// servedBarMaintenance is what the backend would be served as without a
// maintenance entry, by the one rule every reader uses, with its outlier
// ejection and passive health's.
func (b *Backend) servedBarMaintenance() health.Served {
	b.mu.Lock()
	defer b.mu.Unlock()
	return health.Serve(b.machineLocked(), false, b.outlier.Enforced())
}

// expireMaintenance ends the maintenances that a clock ends, whose end has
// come at now.
func (p *Pool) expireMaintenance(now time.Time) {
	if !p.maint.due.Reached(now) {
		return
	}
	p.mu.Lock()
	for _, name := range p.maint.set.Expire(now) {
		if b := p.backendLocked(name); b != nil {
			b.exitMaintenance("expired")
		}
	}
	p.scheduleExpiryLocked()
	p.mu.Unlock()
	p.noteFailOpen()
}

// scheduleExpiryLocked sets due to the earliest end by the clock. The
// caller holds mu.
func (p *Pool) scheduleExpiryLocked() {
	p.maint.due.Set(p.maint.set.NextEnd())
	p.wakeRun()
}

// attachMaintenanceLocked puts every backend that has an entry in
// maintenance, after a reload or a new set of entries. The caller holds mu.
func (p *Pool) attachMaintenanceLocked() {
	for _, b := range p.backends {
		if m, ok := p.maint.set.Get(b.Name); ok {
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
	return p.maint.inUse.Load() || p.maint.set.Len() > 0
}

// backendLocked finds a backend by name. The caller holds mu.
func (p *Pool) backendLocked(name string) *Backend {
	return p.byName[name]
}

// servedLocked is what the backend is served as: its probe-derived
// health under maintenance or an enforced outlier ejection. The caller
// holds b.mu.
func (b *Backend) servedLocked() health.Served {
	return health.Serve(b.machineLocked(), b.maintenance != nil, b.outlier.Enforced())
}

// enterMaintenance sets the backend's maintenance entry (a backend already
// in maintenance takes the new entry's reason and until), logging the
// change once.
func (b *Backend) enterMaintenance(m entries.Entry) {
	b.mu.Lock()
	before := b.servedLocked()
	entered := b.maintenance == nil
	b.maintenance = &m
	if entered {
		b.noteTransitionLocked(before, b.servedLocked(), b.clock())
	}
	b.mu.Unlock()
	if entered {
		level.Info(b.logger).Log("msg", "Backend entered maintenance", "backend", b.Name, "url", b.URL,
			"from", before.State(), "to", health.ServedMaintenance, "reason", m.Reason, "by", m.By, "until", m.Until)
	}
}

// exitMaintenance clears the backend's maintenance entry. A probed backend
// must earn readmission from unhealthy; one that is not probed shows its
// probe-derived state at once, unless an outlier ejection still holds it
// out: it is then served, and shown, as ejected.
func (b *Backend) exitMaintenance(why string) {
	b.mu.Lock()
	if b.maintenance == nil {
		b.mu.Unlock()
		return
	}
	before := b.servedLocked()
	b.maintenance = nil
	readmission := "at once: not probed"
	ownChanged := false
	if b.Probe.Enabled {
		b.health = b.health.AfterMaintenance()
		ownChanged = b.afterMaintenanceLocked(b.clock())
		readmission = fmt.Sprintf("after %d consecutive ok probes", b.Probe.Successes)
	}
	after := b.servedLocked()
	b.noteTransitionLocked(before, after, b.clock())
	b.mu.Unlock()
	b.pool.noteFleet(b, "", ownChanged)
	level.Info(b.logger).Log("msg", "Backend left maintenance", "backend", b.Name, "url", b.URL,
		"from", health.ServedMaintenance, "to", after.State(), "why", why, "readmission", readmission)
}

// logHiddenTransition logs, at debug level, a change of the probe-derived
// state of a backend in maintenance: the state it shows does not change.
func (b *Backend) logHiddenTransition(from, to health.State, r health.Result) {
	level.Debug(b.logger).Log("msg", "Probe-derived state changed during maintenance", "backend", b.Name,
		"url", b.URL, "probe_path", b.Probe.Path, "from", from, "to", to, "class", r.Class, "status", r.StatusCode)
}

// admittedLocked reports whether a maintenance request for the backend
// was admitted and its entry is not applied yet. The caller holds judgeMu.
func (p *Pool) admittedLocked(b *Backend) bool {
	return p.maint.admitted[b.Name] > 0
}
