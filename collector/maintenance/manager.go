package maintenance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
)

// maxSwapAttempts bounds the compare-and-swap retries of one request: each
// conflict means another writer landed first, and the request is judged
// again on what it wrote.
const maxSwapAttempts = 8

// resyncInterval is how often the manager reads the store although no
// change was announced: it notices a store that went away or came back
// within it, and catches up on a change a broken watch missed, so that a
// replica converges within a second of the store answering again.
//
// The watch alone cannot tell these: etcd's client re-establishes a
// broken watch stream by itself and says nothing while it cannot, so a
// replica cut from etcd by a silent route would go on reporting a
// healthy store; and a store restored from an older snapshot is seen
// only by a read that answers an older revision. Progress requests on
// the watch with a deadline could notice both, but each would then need
// this same read to recover, behind a second mechanism that the fault
// tests would have to prove again. The read is cheap: three
// replicas reading every half second cost etcd 70 ms of CPU in 20 s over
// what their three watches cost (about 0.6 ms a read, 0.35% of a core).
const resyncInterval = 500 * time.Millisecond

// Backoff of the retried saves of ended entries.
const (
	minRetry = time.Second
	maxRetry = 30 * time.Second
)

// Manager decides maintenance: it grants an entry only by a
// compare-and-swap on the store, after judging the readiness budget from
// this replica's health view with every stored entry counted, and it
// applies to the pool every state the store reaches, its own writes and
// other replicas' alike. With a shared store it keeps the last state it
// applied (applied), and serves it, marked stale, while the store cannot
// be reached.
//
// Its mu is taken before any lock of the pool's: apply hands the entries
// to the pool under it, so that states reach the pool in revision order.
type Manager struct {
	pool    *pool.Pool
	store   store.Store
	applied *store.Applied
	logger  log.Logger
	now     func() time.Time
	metrics *metrics

	mu sync.Mutex
	// state is the last state read from or written to the store, or
	// read from applied at start.
	state store.State
	// fromStore is set once state came from the store itself; until
	// then it is the saved state, which any state read replaces.
	fromStore bool
	// synced is set once some state is in force: the store's or the
	// saved one.
	synced bool
	// answered is set once an operation on the store has finished since
	// start, whether the store answered it or not.
	answered bool
	// local differs from state.Entries when an end of maintenance is in
	// force here but its save failed (an unshared store only); dirty says
	// so, and the save is retried.
	local []entries.Entry
	dirty bool
	// health of the store.
	healthy  bool
	lastSync time.Time
	lastErr  error
	// saveErr is the last failure to keep the applied state, nil once
	// a save succeeds.
	saveErr error
	// saved is the state last kept in applied.
	saved store.State
	// corruptLogged is the revision of the corrupt data last logged.
	corruptLogged int64
}

// NewManager returns the manager of p's entries in s. applied, for a
// shared store, keeps the last state applied across restarts; nil keeps
// none. It registers the metrics of maintenance and its store on reg.
func NewManager(p *pool.Pool, s store.Store, applied *store.Applied, reg prometheus.Registerer, logger log.Logger, now func() time.Time) *Manager {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	if now == nil {
		now = time.Now
	}
	return &Manager{pool: p, store: s, applied: applied, metrics: newMetrics(reg, s.Shared()), logger: logger, now: now}
}

// Start reads the store once and applies what it holds. When the store
// cannot be read it applies the saved state, if there is one, and
// returns the error of the read; a replica with a shared store serves on
// (the saved state, or none and /ready failing until the first read
// succeeds). The saved state is not applied first: a backend whose entry
// ended meanwhile would enter maintenance and leave it again, and a
// probed one would then have to earn its readmission.
func (m *Manager) Start(ctx context.Context) error {
	if read, err := m.sync(ctx); err != nil {
		m.Restore()
		// The read that failed may still carry the lease keys of a
		// document it could not decode: they end the saved entries
		// whose lease is gone.
		m.mu.Lock()
		m.endByLeasesLocked(read, err)
		m.mu.Unlock()
		return err
	}
	return nil
}

// Restore applies the saved state, marked stale: the store has not
// confirmed it yet, and any state Run reads from it replaces this one.
// A replica sharing a store restores before it serves, rather than wait
// for a store that may be unreachable. A saved state that cannot be read,
// or none, is logged, and the replica waits for the store: until then it
// is not synced.
func (m *Manager) Restore() {
	if m.applied == nil {
		return
	}
	st, ok, err := m.applied.Read()
	if err != nil {
		level.Error(m.logger).Log("msg", "Cannot read the last applied maintenance state; not ready until the store answers", "err", err)
		return
	}
	if !ok {
		level.Info(m.logger).Log("msg", "No maintenance state saved yet; not ready until the store answers", "store", m.store.Kind(), "file", m.applied.Path())
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state, m.saved, m.local, m.synced = st, st, st.Entries, true
	m.metrics.storeUp.Set(0)
	level.Info(m.logger).Log("msg", "Serving the last applied maintenance state until the store answers", "file", m.applied.Path(),
		"revision", st.Revision, "entries", len(st.Entries))
	m.pool.SetMaintenance(st.Entries, m.keeper())
}

// keeper is what measures the entries' ttls: a shared store, or this
// replica's clock.
func (m *Manager) keeper() entries.Keeper {
	if m.store.Shared() {
		return entries.KeptByStore
	}
	return entries.KeptByClock
}

// Synced reports whether some state of the entries is in force: one read
// from the store, or the one saved by an earlier run. Until then a
// replica sharing a store does not know which backends are out, and is
// not ready.
func (m *Manager) Synced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.synced
}

// FirstReadDone reports whether an operation on the store has finished
// since start, answered or failed: the first read (the watch's, which Run
// starts at once) ends within the store's request timeout. Until then a
// replica serving a saved state does not know whether an entry was
// granted while it was down.
func (m *Manager) FirstReadDone() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.answered
}

// Status is the store's health as this replica sees it.
func (m *Manager) Status() StoreStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := StoreStatus{Kind: m.store.Kind(), Healthy: m.upLocked(), Stale: !m.healthy || !m.fromStore, Synced: m.synced, LastSync: m.lastSync}
	switch {
	case !m.healthy && m.lastErr != nil:
		s.Error = m.lastErr.Error()
	case m.saveErr != nil:
		s.Error = m.saveErr.Error()
	}
	return s
}

// upLocked is probegate_maintenance_store_up: the store answered last, the
// state in force is its own, and it is kept. The caller holds mu.
func (m *Manager) upLocked() bool {
	return m.healthy && m.fromStore && m.saveErr == nil
}

// observe takes what the store's watch hands on. A watch that had to
// resume from a compacted revision is no failure of the store, which
// answered: the watch reads the entries afresh and hands them on next, so
// it is warned of and counted, and the store stays up.
func (m *Manager) observe(st store.State, err error) {
	m.count(opWatch, err)
	switch {
	case errors.Is(err, store.ErrCompacted):
		level.Warn(m.logger).Log("msg", "The maintenance store's watch was compacted past the revision it resumed from; reading the entries afresh",
			"store", m.store.Kind(), "err", err)
	case err != nil:
		m.failed(st, err)
	default:
		m.apply(st)
	}
}

// failed records an error reading the store, which answered read with
// it. Corrupt stored data is logged once per revision: it stays until an
// operator repairs it, and every replica reads it again and again
// meanwhile. The lease keys read with it still end the entries whose
// lease is gone.
func (m *Manager) failed(read store.State, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var corrupt *store.CorruptError
	if errors.As(err, &corrupt) && corrupt.Revision != m.corruptLogged {
		m.corruptLogged = corrupt.Revision
		level.Error(m.logger).Log("msg", "The stored maintenance entries are corrupt; the entries last read stay in force and writes are refused until it is repaired or deleted",
			"key", corrupt.Key, "revision", corrupt.Revision, "err", corrupt.Err)
	}
	m.syncedLocked(err)
	m.endByLeasesLocked(read, err)
}

// endByLeasesLocked ends the entries in force whose lease a read of a
// corrupt document found gone (store.EndedByLeases): writes stay refused
// and the other entries stay in force, but no entry outlives the lease
// that measures it. It reports whether it told the pool. The caller
// holds mu.
func (m *Manager) endByLeasesLocked(read store.State, err error) bool {
	kept, ended := store.EndedByLeases(m.state, read, err)
	if !ended {
		return false
	}
	left := make([]string, 0, len(m.state.Entries)-len(kept.Entries))
	for _, e := range m.state.Entries {
		if indexOf(kept.Entries, e.Backend) < 0 {
			left = append(left, e.Backend)
		}
	}
	level.Warn(m.logger).Log("msg", "Maintenance entries whose lease ended leave service although the stored entries cannot be read",
		"store", m.store.Kind(), "revision", kept.Revision, "backends", strings.Join(left, ","))
	m.state, m.local = kept, kept.Entries
	m.keepLocked(kept)
	m.pool.SetMaintenance(m.local, m.keeper())
	return true
}

// apply makes st the state in force when it is newer than the one the
// manager has (any state from the store replaces a saved one), hands its
// entries to the pool and keeps it.
func (m *Manager) apply(st store.State) { m.applyState(st, false) }

// applyState is apply; rewound says that st comes from a read that began
// after a newer state was applied: the store went back in revisions (etcd
// restored from a snapshot), and its state is the truth, applied whatever
// its revision. An older state otherwise is one that lost a race with a
// newer one (a read against the watch) and is dropped; it says nothing of
// the store's health either way.
func (m *Manager) applyState(st store.State, rewound bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fromStore && !rewound && st.Revision < m.state.Revision {
		return
	}
	m.syncedLocked(nil)
	if rewound {
		level.Warn(m.logger).Log("msg", "The maintenance store went back in revisions (restored from a snapshot?): its state is taken as the truth",
			"store", m.store.Kind(), "applied_revision", m.state.Revision, "revision", st.Revision, "entries", len(st.Entries))
	} else if m.fromStore && st.Revision == m.state.Revision && m.state.Revision != 0 {
		return
	}
	if m.fromStore && !rewound && !m.dirty && st.Token == m.state.Token && slices.EqualFunc(st.Entries, m.state.Entries, entries.Entry.Equal) {
		// Only the revision moved (etcd's moves with every replica view
		// published, twice a second): the pool and the saved state
		// already hold these entries, and telling the pool again would
		// take its locks, and a save would fsync, under mu, for nothing.
		m.state.Revision = st.Revision
		return
	}
	if m.store.Shared() && m.state.Token != 0 && st.Token == 0 && m.fromStore {
		level.Warn(m.logger).Log("msg", "The maintenance entries were deleted from the store by another hand: no entry is in force, and the next grant stores them afresh",
			"store", m.store.Kind(), "revision", st.Revision)
	}
	had := len(m.local) > 0
	m.state, m.fromStore, m.synced = st, true, true
	if !m.dirty {
		m.local = st.Entries
	}
	m.keepLocked(st)
	if !had && len(m.local) == 0 {
		// Nothing was or is in maintenance: telling the pool would mark
		// maintenance a feature in use, and export its series, on every
		// probegate that never had an entry.
		return
	}
	m.pool.SetMaintenance(m.local, m.keeper())
}

// keepLocked saves st as the last applied state when its entries differ
// from the state saved last, or the last save failed. The caller holds
// mu.
func (m *Manager) keepLocked(st store.State) {
	if m.applied == nil || (m.saveErr == nil && m.saved.Token == st.Token && slices.EqualFunc(m.saved.Entries, st.Entries, entries.Entry.Equal)) {
		return
	}
	err := m.applied.Write(st)
	switch {
	case err != nil && m.saveErr == nil:
		level.Error(m.logger).Log("msg", "Cannot keep the applied maintenance state; a restart while the store is unreachable would serve an older one", "err", err)
	case err == nil && m.saveErr != nil:
		level.Info(m.logger).Log("msg", "The applied maintenance state is kept again", "file", m.applied.Path())
	}
	m.saveErr = err
	if err == nil {
		m.saved = st
	}
	m.metrics.storeUp.Set(boolGauge(m.upLocked()))
}

// syncedLocked records the outcome of an operation on the store. The
// caller holds mu.
func (m *Manager) syncedLocked(err error) {
	m.answered = true
	if err != nil {
		if m.healthy || m.lastErr == nil {
			level.Warn(m.logger).Log("msg", "Maintenance store unavailable; reads answer from the last known state and writes are refused", "store", m.store.Kind(), "err", err)
		}
		m.healthy, m.lastErr = false, err
		m.metrics.storeUp.Set(0)
		return
	}
	if !m.healthy && m.lastErr != nil {
		level.Info(m.logger).Log("msg", "Maintenance store available again", "store", m.store.Kind())
	}
	m.healthy, m.lastErr, m.lastSync = true, nil, m.now()
	m.metrics.storeUp.Set(boolGauge(m.upLocked()))
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// sync reads the store and applies what it holds. A read that began after
// a state was applied and answers an older revision finds a store that
// went back (etcd restored from a snapshot): a linearizable read never
// answers older than what it already answered otherwise.
func (m *Manager) sync(ctx context.Context) (store.State, error) {
	m.mu.Lock()
	applied := int64(0)
	if m.fromStore {
		applied = m.state.Revision
	}
	m.mu.Unlock()
	st, err := m.load(ctx)
	if err != nil {
		return st, err
	}
	m.applyState(st, st.Revision < applied)
	return st, nil
}

func (m *Manager) load(ctx context.Context) (store.State, error) {
	st, err := m.store.Load(ctx)
	if ctx.Err() != nil {
		// Shutting down, or the client gave up: not the store's fault.
		return st, err
	}
	m.count(opLoad, err)
	if err != nil {
		m.failed(st, err)
	}
	return st, err
}

func (m *Manager) swap(ctx context.Context, base store.State, w store.Write) (store.State, error) {
	next, err := m.store.Swap(ctx, base, w)
	m.count(opSwap, err)
	switch {
	case errors.Is(err, store.ErrConflict):
		m.metrics.conflicts.Inc()
	case err != nil:
		m.failed(store.State{}, err)
	}
	return next, err
}

func (m *Manager) count(op string, err error) {
	result := resultSuccess
	switch {
	case errors.Is(err, store.ErrConflict):
		result = resultConflict
	case errors.Is(err, store.ErrCompacted):
		result = resultCompacted
	case err != nil:
		result = resultError
	}
	m.metrics.operations.WithLabelValues(op, result).Inc()
}

// base is the state a write starts from: the entries in force here and the
// store revision they were read at, with the store's own bookkeeping of
// them.
func (m *Manager) base() store.State {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.state
	st.Entries = m.local
	return st
}

// refresh reads the store after a conflict and returns the state to retry
// on.
func (m *Manager) refresh(ctx context.Context) (store.State, error) {
	if _, err := m.sync(ctx); err != nil {
		return store.State{}, err
	}
	return m.base(), nil
}

// grant is the outcome of an enter that stored its entry.
type grant struct {
	Entry  entries.Entry
	Forced bool
	// Budget is the readiness budget with the new entry counted.
	Budget budget.Budget
}

// budgetError refuses a maintenance that the readiness budget does not
// allow: the backend is in service and no disruption is allowed.
type budgetError struct {
	Budget budget.Budget
}

func (e *budgetError) Error() string {
	return fmt.Sprintf("the readiness budget allows no disruption: expected=%d current_healthy=%d desired_healthy=%d disruptions_allowed=%d",
		e.Budget.Expected, e.Budget.CurrentHealthy, e.Budget.DesiredHealthy, e.Budget.DisruptionsAllowed)
}

// notYetProbedError refuses a maintenance request that the budget cannot
// judge yet: some backends have no verdict, or discovery has not
// delivered. It lasts at most the awaited backends' failures × interval
// after they appeared, and as long as a discovery source takes to answer.
type notYetProbedError struct {
	Awaited pool.Awaited
}

func (e *notYetProbedError) Error() string {
	var waits []string
	if a := e.Awaited; a.Unjudged > 0 {
		names := strings.Join(a.Backends, ", ")
		if more := a.Unjudged - len(a.Backends); more > 0 {
			names += fmt.Sprintf(" and %d more", more)
		}
		subject := fmt.Sprintf("%d backends have", a.Unjudged)
		if a.Unjudged == 1 {
			subject = "1 backend has"
		}
		waits = append(waits, fmt.Sprintf("%s no verdict from the probes yet (%s)", subject, names))
	}
	if len(e.Awaited.Discovery) > 0 {
		waits = append(waits, "service discovery has not delivered yet ("+strings.Join(e.Awaited.Discovery, ", ")+")")
	}
	return "not yet probed: " + strings.Join(waits, "; ") + ": the readiness budget counts only backends with a verdict"
}

// groupBudgetError refuses a maintenance that the budget of the
// backend's replica group (readiness.per_group) does not allow: the
// backend is in service and its group can spare no replica.
type groupBudgetError struct {
	// Budget is the pool's, which allows the disruption.
	Budget budget.Budget
	Group  budget.Group
}

func (e *groupBudgetError) Error() string {
	g := e.Group
	return fmt.Sprintf("the budget of replica group %q allows no disruption: replicas=%d current_healthy=%d desired_healthy=%d disruptions_allowed=%d",
		g.Name, g.Expected, g.CurrentHealthy, g.DesiredHealthy, g.DisruptionsAllowed)
}

// storeError is an operation the store could not do: nothing changed.
type storeError struct {
	Kind string
	Err  error
}

func (e *storeError) Error() string {
	return fmt.Sprintf("the %s maintenance store is unavailable, nothing changed: %v", e.Kind, e.Err)
}

func (e *storeError) Unwrap() error { return e.Err }

// enter puts e.Backend in maintenance with e's reason and by, for ttl (0:
// until it is ended). It judges the budget on the entries it last knew,
// then stores the new entries by a compare-and-swap on their revision;
// when another write came first it judges again on the new entries. The
// entry's Since and Until are one reading of the clock; a shared store
// measures the ttl itself, and Until is then for people. It returns a
// *budgetError when the backend is in service and no disruption is
// allowed, a *groupBudgetError when its replica group allows none (both
// unless force), a *notYetProbedError when the budget cannot be judged yet
// (unless force), pool.ErrUnknownBackend, a *storeError, or
// errContended when every attempt lost to another writer; in each case
// nothing changed.
func (m *Manager) enter(ctx context.Context, e entries.Entry, ttl time.Duration, force bool) (grant, error) {
	st := m.base()
	for range maxSwapAttempts {
		now := m.now()
		entries := unexpired(st.Entries, m.keeper(), now)
		// The pool holds the backend out of its ejections' count until
		// the entry is applied, or this attempt gave up: an ejection
		// cannot spend the disruption granted here meanwhile.
		admission, release, err := m.pool.AdmitMaintenance(entries, e.Backend)
		if err != nil {
			return grant{}, err
		}
		var refusal error
		switch {
		case !admission.Awaited.None():
			// The budget cannot be judged yet: an unknown backend may be
			// dead, and a discovered one missing.
			refusal = &notYetProbedError{Awaited: admission.Awaited}
		case !admission.InService:
		case admission.Budget.DisruptionsAllowed == 0:
			refusal = &budgetError{Budget: admission.Budget}
		case !admission.Group.AllowsDisruption():
			refusal = &groupBudgetError{Budget: admission.Budget, Group: admission.Group}
		}
		forced := refusal != nil
		if forced && !force {
			release()
			return grant{}, refusal
		}
		entry := e
		// Round(0) drops the monotonic reading, which a stored entry
		// read back does not have.
		entry.Since, entry.Until = now.Round(0), time.Time{}
		if ttl > 0 {
			entry.Until = now.Add(ttl).Round(0)
		}
		if i := indexOf(entries, e.Backend); i >= 0 {
			entry.Since = entries[i].Since
			entries = slices.Delete(slices.Clone(entries), i, i+1)
		}
		next := sorted(append(slices.Clone(entries), entry))
		written, err := m.swap(ctx, st, store.Write{Entries: next, Granted: e.Backend, TTL: ttl})
		if err != nil {
			release()
		}
		if errors.Is(err, store.ErrConflict) {
			if st, err = m.refresh(ctx); err != nil {
				return grant{}, &storeError{Kind: m.store.Kind(), Err: err}
			}
			continue
		}
		if err != nil {
			return grant{}, &storeError{Kind: m.store.Kind(), Err: err}
		}
		m.written(written)
		release()
		if i := indexOf(written.Entries, e.Backend); i >= 0 {
			entry = written.Entries[i]
		}
		after, _, _ := m.pool.BudgetWith(written.Entries, e.Backend)
		m.logEntered(entry, forced, after)
		return grant{Entry: entry, Forced: forced, Budget: after}, nil
	}
	// Every attempt lost to another writer: the budget is being spent
	// right now, so this is a refusal to retry shortly.
	return grant{}, errContended
}

// errContended refuses a request whose every compare-and-swap lost to
// another writer: the entries are changing right now, so it is to be
// retried shortly, as a 429.
var errContended = errors.New("the maintenance entries kept changing under concurrent requests; retry shortly")

func (m *Manager) logEntered(e entries.Entry, forced bool, after budget.Budget) {
	keyvals := []any{"backend", e.Backend, "reason", e.Reason, "by", e.By, "until", e.Until, "forced", forced,
		"current_healthy", after.CurrentHealthy, "desired_healthy", after.DesiredHealthy, "store", m.store.Kind()}
	if forced {
		level.Warn(m.logger).Log(append([]any{"msg", "Maintenance forced against the readiness budget"}, keyvals...)...)
	} else {
		level.Info(m.logger).Log(append([]any{"msg", "Maintenance granted"}, keyvals...)...)
	}
}

// written applies a state this replica stored itself.
func (m *Manager) written(st store.State) {
	m.mu.Lock()
	m.dirty = false
	m.mu.Unlock()
	m.apply(st)
}

// exit ends the maintenance of the named backend. It returns whether there
// was an entry and whether its end is stored. With a shared store the
// store decides: the entries are read from it first (an entry this
// replica never saw is ended all the same, and one the store no longer
// holds is reported as none), and an end that cannot be stored is
// refused (*storeError), or the replicas would disagree. With a store of
// this replica's own the end takes effect at once and its save is
// retried until it succeeds.
func (m *Manager) exit(ctx context.Context, name string) (existed, saved bool, err error) {
	st := m.base()
	if m.store.Shared() {
		if st, err = m.refresh(ctx); err != nil {
			return false, false, &storeError{Kind: m.store.Kind(), Err: err}
		}
	}
	for range maxSwapAttempts {
		entries := unexpired(st.Entries, m.keeper(), m.now())
		i := indexOf(entries, name)
		if i < 0 {
			if _, _, err := m.pool.BudgetWith(nil, name); err != nil {
				return false, false, err
			}
			return false, true, nil
		}
		next := slices.Delete(slices.Clone(entries), i, i+1)
		written, err := m.swap(ctx, st, store.Write{Entries: next})
		if errors.Is(err, store.ErrConflict) {
			if st, err = m.refresh(ctx); err != nil {
				return true, false, &storeError{Kind: m.store.Kind(), Err: err}
			}
			continue
		}
		if err != nil {
			if m.store.Shared() {
				return true, false, &storeError{Kind: m.store.Kind(), Err: err}
			}
			m.endLocally(next, err)
			return true, false, nil
		}
		m.written(written)
		return true, true, nil
	}
	return true, false, &storeError{Kind: m.store.Kind(), Err: store.ErrConflict}
}

// endLocally puts an end in force that the store did not record, and
// leaves the save to the retries of Run.
func (m *Manager) endLocally(entries []entries.Entry, err error) {
	m.mu.Lock()
	m.local, m.dirty = entries, true
	m.mu.Unlock()
	m.pool.SetMaintenance(entries, m.keeper())
	level.Error(m.logger).Log("msg", "Maintenance ended here but not saved; retrying until the store takes it", "store", m.store.Kind(), "err", err)
}

// Run keeps the replica's entries in step with the store until ctx ends:
// it applies every change the store's watch announces and reads the
// store every resyncInterval. With a store of this replica's own it also
// removes the entries whose Until has come (the pool ends them at that
// time on its own; the removal only tidies the file) and retries saves
// that failed, with back-off, and at the end tries a pending save once
// more. A shared store is never tidied: an entry it ended stays in its
// document, out of force, until the next write that happens anyway, so
// that a replica writes nothing when nothing changed.
func (m *Manager) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { m.store.Watch(ctx, m.observe) })
	defer wg.Wait()
	retry, delay := time.Time{}, minRetry
	interval := time.Second
	if m.store.Shared() {
		interval = resyncInterval
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			m.flush(context.Background())
			return
		case <-ticker.C:
		}
		if m.store.Shared() {
			m.sync(ctx)
			continue
		}
		if !m.pending() || m.now().Before(retry) {
			continue
		}
		if err := m.tidy(ctx); err != nil {
			retry, delay = m.now().Add(delay), min(2*delay, maxRetry)
			continue
		}
		retry, delay = time.Time{}, minRetry
	}
}

// pending reports whether the store holds something that should be gone:
// an end that was not saved, or an entry whose Until has come.
func (m *Manager) pending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dirty || len(unexpired(m.state.Entries, m.keeper(), m.now())) != len(m.state.Entries)
}

// tidy stores the entries in force here without the expired ones.
func (m *Manager) tidy(ctx context.Context) error {
	for range maxSwapAttempts {
		st := m.base()
		next := unexpired(st.Entries, m.keeper(), m.now())
		written, err := m.swap(ctx, st, store.Write{Entries: next})
		if errors.Is(err, store.ErrConflict) {
			if _, err := m.refresh(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		m.written(written)
		return nil
	}
	return store.ErrConflict
}

// flush makes one last attempt at a pending save, at shutdown.
func (m *Manager) flush(ctx context.Context) {
	m.mu.Lock()
	dirty := m.dirty
	m.mu.Unlock()
	if !dirty {
		return
	}
	if err := m.tidy(ctx); err != nil {
		level.Error(m.logger).Log("msg", "Maintenance end still not saved at shutdown; the entry returns at the next start", "store", m.store.Kind(), "err", err)
	}
}

// unexpired returns the entries still in force at now, their ttls
// measured by k; the slice may be in itself.
func unexpired(in []entries.Entry, k entries.Keeper, now time.Time) []entries.Entry {
	ended := func(e entries.Entry) bool { return !e.InForce(now, k) }
	if !slices.ContainsFunc(in, ended) {
		return in
	}
	return slices.DeleteFunc(slices.Clone(in), ended)
}

func indexOf(in []entries.Entry, name string) int {
	return slices.IndexFunc(in, func(e entries.Entry) bool { return e.Backend == name })
}

func sorted(in []entries.Entry) []entries.Entry {
	slices.SortFunc(in, func(a, b entries.Entry) int {
		switch {
		case a.Backend < b.Backend:
			return -1
		case a.Backend > b.Backend:
			return 1
		}
		return 0
	})
	return in
}
