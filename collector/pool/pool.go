package pool

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/history"
	"github.com/probegate/probegate/collector/httpclient"
	"github.com/probegate/probegate/collector/pool/internal/due"
	"github.com/probegate/probegate/config"
)

// Pool is the set of backends in config order, with the selection,
// fail-open and readiness-budget rules over them and passive health.
//
// Lock order. A goroutine that holds one of these locks takes only locks
// further down the list:
//
//  0. the locks of the pool's callers that call it while holding them,
//     neither taken under the other: the reconciler's mutex (reconcile,
//     one reload or discovery update at a time, which calls Apply), and
//     the maintenance manager's mutex (maintenance.Manager.mu), under
//     which it hands the store's states to the pool (SetMaintenance,
//     AdmitMaintenance, BudgetWith) so that they reach it in revision
//     order.
//  1. applyMu: one Apply at a time.
//  2. judgeMu: one judgement over the whole pool at a time, each of
//     which counts the backends and then acts on one: a passive or an
//     outlier ejection, the passive readmission scan, judging a round,
//     re-evaluating fail-open, admitting and applying maintenance. It
//     also guards the outlier scratch space, failOpen and the admitted
//     maintenance requests.
//  3. mu (read-write): the backend list, the settings and the
//     maintenance entries.
//  4. Backend.mu: one backend's health, counters and windows.
//  5. the transition log's own mutex (history.Log), the innermost.
//
// A backend's methods release Backend.mu before they take any lock of its
// pool's, so the order holds for the inputs too (RecordProbe,
// RecordRound). The client cache's lock is httpclient's own and taken
// under applyMu only. Due times, the pending fail-open flag and the
// counters of suppressed ejections are atomics, under no lock, and the
// causes of local probe failures already logged a sync.Map.
type Pool struct {
	logger  log.Logger
	now     func() time.Time
	clients *httpclient.Cache

	applyMu sync.Mutex
	judgeMu sync.Mutex
	mu      sync.RWMutex

	// backends, byName and settings are guarded by mu. byName finds a
	// backend by its name in one step whatever the pool's size, for the
	// readers that ask after one backend (the HAProxy agent, maintenance).
	backends []*Backend
	byName   map[string]*Backend
	settings Settings

	// readmitDue is when the earliest passively ejected backend that
	// probes cannot readmit is due for readmission (run.go).
	readmitDue due.Time
	// wake tells Run that a due time moved. It holds one signal, which is
	// all Run needs: it loads the due times afresh when woken.
	wake chan struct{}

	// failOpen is the fail-open state last logged, guarded by judgeMu;
	// failOpenPending is set while a re-evaluation is waiting to start.
	failOpen        bool
	failOpenPending atomic.Bool
	// applied is set by the first Apply: later ones are reloads, whose
	// changes are logged. It is guarded by applyMu.
	applied bool
	// maint holds the maintenance entries (maintenance.go).
	maint maintenanceEntries
	// discoveryAwaited are the discovery sources whose first targets
	// the pool waits for (awaited.go), guarded by mu.
	discoveryAwaited []string
	// transitionLog is the last state changes of every backend.
	transitionLog *history.Log
	// outliers is outlier detection's part (outlier.go).
	outliers outlierPool
	// passiveSuppressed counts the passive ejections the readiness
	// budget did not allow (ejection.go).
	passiveSuppressed atomic.Uint64
	// localFaults are the causes of local probe failures logged so far
	// (localfault.go).
	localFaults localFaults
	// fleetObserver hears of shared probing's findings (fleet.go).
	fleetObserver atomic.Pointer[func(backend string)]
	// fleetCounts are shared probing's mode and dissents (fleet.go).
	fleetCounts fleetCounts
}

// New returns an empty pool. A nil logger logs nothing and a nil now is
// time.Now.
func New(logger log.Logger, now func() time.Time) *Pool {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	if now == nil {
		now = time.Now
	}
	return &Pool{logger: logger, now: now, clients: httpclient.NewCache(), wake: make(chan struct{}, 1),
		transitionLog: &history.Log{}}
}

// Apply makes the pool the given targets, in their order, under the given
// settings. A backend whose name, url and probe settings are unchanged
// keeps its state (and its object, so in-flight probes still land; a new
// object that inherits the state when only its client configuration
// changed); any other backend starts afresh. The connections of hosts no
// backend uses any more are closed. Nothing changes when an error is
// returned.
func (p *Pool) Apply(targets []Target, s Settings) error {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	p.mu.RLock()
	previous := p.backends
	p.mu.RUnlock()
	old := make(map[string]*Backend, len(previous))
	for _, b := range previous {
		old[b.Name] = b
	}

	backends := make([]*Backend, 0, len(targets))
	clients := make([]*http.Client, 0, 1)
	byName := make(map[string]*Backend, len(targets))
	clientConfigs := map[*http.Client]*config.HTTPClientConfig{}
	for _, t := range targets {
		var b *Backend
		err := fmt.Errorf("two backends are named %q: names identify backends and must be unique", t.Name)
		if _, seen := byName[t.Name]; !seen {
			b, err = p.buildBackend(t, old[t.Name], clientConfigs)
			byName[t.Name] = b
		}
		if err != nil {
			// Drop the clients built for this attempt: the cache holds
			// the previous backends' clients again.
			kept := make([]*http.Client, len(previous))
			for i, b := range previous {
				kept[i] = b.Client
			}
			p.clients.Retain(kept)
			return fmt.Errorf("backend %q: %w", t.Name, err)
		}
		backends = append(backends, b)
		clients = append(clients, b.Client)
	}

	p.mu.Lock()
	p.backends = backends
	p.byName = byName
	p.settings = s
	p.attachMaintenanceLocked()
	p.mu.Unlock()
	if p.applied {
		p.logChanges(previous, backends)
	}
	p.applied = true
	p.noteFailOpen()

	p.clients.Retain(clients)
	for _, addr := range goneHosts(previous, backends) {
		p.clients.CloseHost(addr)
	}
	// A new window moves the readmission of backends ejected until it
	// ends: have the readmission scan look at them again now.
	p.judgeMu.Lock()
	forgetUnusedWindows(backends, s)
	if p.readmitDue.MarkDue() {
		p.wakeRun()
	}
	p.judgeMu.Unlock()
	return nil
}

// buildBackend builds the backend of t, or keeps previous when nothing
// about it changed. Backends that share a client share the one copy of its
// settings in clientConfigs.
func (p *Pool) buildBackend(t Target, previous *Backend, clientConfigs map[*http.Client]*config.HTTPClientConfig) (*Backend, error) {
	b := &Backend{
		Name:   t.Name,
		URL:    strings.TrimRight(t.URL, "/"),
		Probe:  t.Probe,
		group:  t.Group,
		logger: p.logger,
		pool:   p,
		stats:  history.NewProbeStats(t.Probe.Enabled, p.now()),
	}
	if previous != nil && previous.SameIdentity(b) {
		// A backend's group is fixed for its life, as its client is:
		// one that moves to another group is a new object that keeps
		// the state.
		if reflect.DeepEqual(previous.ClientConfig(), t.ClientConfig) && previous.group == b.group {
			return previous, nil
		}
		previous.mu.Lock()
		b.inheritLocked(previous)
		previous.mu.Unlock()
	}
	client, err := p.clients.Client(t.ClientConfig)
	if err != nil {
		return nil, err
	}
	b.Client = client
	if clientConfigs[client] == nil {
		shared := t.ClientConfig
		clientConfigs[client] = &shared
	}
	b.clientConfig = clientConfigs[client]
	return b, nil
}

// goneHosts lists the dial addresses of the previous backends that none of
// the current ones uses.
func goneHosts(previous, current []*Backend) []string {
	inUse := make(map[string]bool, len(current))
	for _, b := range current {
		if u, err := url.Parse(b.URL); err == nil {
			inUse[httpclient.DialAddr(u)] = true
		}
	}
	var gone []string
	for _, b := range previous {
		if u, err := url.Parse(b.URL); err == nil {
			if addr := httpclient.DialAddr(u); !inUse[addr] {
				inUse[addr] = true // once
				gone = append(gone, addr)
			}
		}
	}
	return gone
}

// Backends returns the backends in config order. The slice is the caller's.
func (p *Pool) Backends() []*Backend {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]*Backend(nil), p.backends...)
}

// Len is the number of backends in the pool.
func (p *Pool) Len() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.backends)
}

// Selection returns the backends that should receive traffic, in config
// order, the ones it left out, and the number of backends in the pool at
// that moment. When the in-service share falls below the panic threshold,
// or nothing is in service, it fails open: it selects every backend but
// those in maintenance. Whatever timed work is due (readmissions,
// maintenance expiry) is done first.
func (p *Pool) Selection() (selected, skipped []*Backend, configured int, failOpen bool) {
	p.catchUp(p.now())
	p.mu.RLock()
	defer p.mu.RUnlock()
	in, failOpen := p.selectLocked()
	selected = make([]*Backend, 0, len(p.backends))
	for i, b := range p.backends {
		if in[i] {
			selected = append(selected, b)
		} else {
			skipped = append(skipped, b)
		}
	}
	return selected, skipped, len(p.backends), failOpen
}

// failsOpen is the fail-open rule: nothing in service, or an in-service
// share (in percent) below the panic threshold.
func failsOpen(inService, configured int, panicThreshold float64) bool {
	if configured == 0 {
		return false
	}
	return inService == 0 || float64(inService)*100 < panicThreshold*float64(configured)
}

// Budget is the readiness budget of the pool now.
func (p *Pool) Budget() budget.Budget {
	p.catchUp(p.now())
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.budgetLocked(p.inMaintenanceLocked, false, nil)
}

// SnapshotOf is a copy of the named backend's state, and false when no
// backend has that name. The timed work due now is done first (a
// maintenance entry that ran out, a readmission), as for a selection, so
// that nothing is served on after its time.
func (p *Pool) SnapshotOf(name string) (BackendSnapshot, bool) {
	p.catchUp(p.now())
	p.mu.RLock()
	b := p.byName[name]
	p.mu.RUnlock()
	if b == nil {
		return BackendSnapshot{}, false
	}
	return b.Snapshot(), true
}

// Snapshot copies every backend and the pool-wide numbers at one moment.
func (p *Pool) Snapshot() Snapshot {
	return p.snapshot(false)
}

func (p *Pool) snapshot(withHistory bool) Snapshot {
	now := p.now()
	p.catchUp(now)
	p.mu.RLock()
	defer p.mu.RUnlock()
	s := Snapshot{Backends: make([]BackendSnapshot, len(p.backends)), Time: now,
		PanicThreshold: p.settings.PanicThreshold, PassiveHealth: p.settings.Passive.Enabled,
		OutlierDetection: p.settings.Outlier.Enabled, OutlierEnforcing: p.settings.Outlier.Enforcing, Suppressed: p.suppressed(),
		PassiveSuppressed: p.passiveSuppressed.Load(),
		Fanout:            p.settings.Fanout, Maintenance: p.maintenanceInUseLocked()}
	s.Probing, s.Dissents = p.fleetCounts.snapshot()
	for i, b := range p.backends {
		if withHistory {
			s.Backends[i] = b.snapshotWithHistory()
		} else {
			s.Backends[i] = b.Snapshot()
		}
		if p.settings.Passive.Enabled {
			s.Backends[i].Traffic.Window = b.windowCounts(now, time.Duration(p.settings.Passive.Window))
		}
		if s.Backends[i].Served.InService() {
			s.InService++
		}
	}
	s.FailOpen = failsOpen(s.InService, len(p.backends), p.settings.PanicThreshold)
	s.Budget = budget.Compute(p.settings.Readiness, len(p.backends), s.InService)
	if p.groupedLocked() {
		s.Groups = groupBudgets(p.backends, p.settings.Readiness.PerGroup, func(i int) bool { return s.Backends[i].Served.InService() })
	}
	return s
}
