package maintenance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/maintenance/entries"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
)

// maxSwapAttempts bounds the compare-and-swap retries of one request: each
// conflict means another writer landed first, and the request is judged
// again on what it wrote.
const maxSwapAttempts = 8

// resyncInterval is how often the manager reads the store although no
// change was announced: it notices a store that went away or came back,
// and catches up on a change a broken watch missed.
const resyncInterval = 2 * time.Second

// Backoff of the retried saves of ended entries.
const (
	minRetry = time.Second
	maxRetry = 30 * time.Second
)

// Manager decides maintenance: it grants an entry only by a
// compare-and-swap on the store, after judging the readiness budget from
// this replica's health view with every stored entry counted, and it
// applies to the pool every state the store reaches, its own writes and
// other replicas' alike.
type Manager struct {
	pool    *pool.Pool
	store   store.Store
	logger  log.Logger
	now     func() time.Time
	metrics *metrics

	mu sync.Mutex
	// state is the last state read from or written to the store.
	state store.State
	// local differs from state.Entries when an end of maintenance is in
	// force here but its save failed (an unshared store only); dirty says
	// so, and the save is retried.
	local []entries.Entry
	dirty bool
	// health of the store.
	healthy  bool
	lastSync time.Time
	lastErr  error
}

// NewManager loads the store's entries into the pool. A store that cannot
// be read is not fatal for a shared store (the manager retries, and writes
// are refused meanwhile); an unshared store was read when it was opened.
//
// It registers the metrics of maintenance and its store on reg.
func NewManager(p *pool.Pool, s store.Store, reg prometheus.Registerer, logger log.Logger, now func() time.Time) *Manager {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	if now == nil {
		now = time.Now
	}
	return &Manager{pool: p, store: s, metrics: newMetrics(reg), logger: logger, now: now}
}

// Start reads the store once and applies what it holds.
func (m *Manager) Start(ctx context.Context) error {
	st, err := m.load(ctx)
	if err != nil {
		return err
	}
	m.apply(st)
	return nil
}

// Status is the store's health as this replica sees it.
func (m *Manager) Status() StoreStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := StoreStatus{Kind: m.store.Kind(), Healthy: m.healthy, LastSync: m.lastSync}
	if !m.healthy && m.lastErr != nil {
		s.Error = m.lastErr.Error()
	}
	return s
}

// apply makes st the state in force when it is newer than the one the
// manager has, and hands its entries to the pool.
func (m *Manager) apply(st store.State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.synced(nil)
	if st.Revision < m.state.Revision || (st.Revision == m.state.Revision && m.state.Revision != 0) {
		return
	}
	m.state = st
	had := len(m.local) > 0
	if !m.dirty {
		m.local = st.Entries
	}
	if !had && len(m.local) == 0 {
		// Nothing was or is in maintenance: telling the pool would mark
		// maintenance a feature in use, and export its series, on every
		// probegate that never had an entry.
		return
	}
	m.pool.SetMaintenance(m.local)
}

// synced records the outcome of an operation on the store. The caller
// holds mu.
func (m *Manager) synced(err error) {
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
	m.metrics.storeUp.Set(1)
}

func (m *Manager) load(ctx context.Context) (store.State, error) {
	st, err := m.store.Load(ctx)
	if ctx.Err() != nil {
		// Shutting down, or the client gave up: not the store's fault.
		return st, err
	}
	m.count(opLoad, err)
	if err != nil {
		m.mu.Lock()
		m.synced(err)
		m.mu.Unlock()
	}
	return st, err
}

func (m *Manager) swap(ctx context.Context, rev int64, entries []entries.Entry) (int64, error) {
	next, err := m.store.Swap(ctx, rev, entries)
	m.count(opSwap, err)
	switch {
	case errors.Is(err, store.ErrConflict):
		m.metrics.conflicts.Inc()
	case err != nil:
		m.mu.Lock()
		m.synced(err)
		m.mu.Unlock()
	}
	return next, err
}

func (m *Manager) count(op string, err error) {
	result := resultSuccess
	switch {
	case errors.Is(err, store.ErrConflict):
		result = resultConflict
	case err != nil:
		result = resultError
	}
	m.metrics.operations.WithLabelValues(op, result).Inc()
}

// base is the state a write starts from: the entries in force here and the
// store revision they were read at.
func (m *Manager) base() store.State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return store.State{Entries: m.local, Revision: m.state.Revision}
}

// refresh reads the store after a conflict and returns the state to retry
// on.
func (m *Manager) refresh(ctx context.Context) (store.State, error) {
	st, err := m.load(ctx)
	if err != nil {
		return store.State{}, err
	}
	m.apply(st)
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

// storeError is an operation the store could not do: nothing changed.
type storeError struct {
	Kind string
	Err  error
}

func (e *storeError) Error() string {
	return fmt.Sprintf("the %s maintenance store is unavailable, nothing changed: %v", e.Kind, e.Err)
}

func (e *storeError) Unwrap() error { return e.Err }

// enter puts e.Backend in maintenance with e's reason, until and by. It
// judges the budget on the entries it last knew, then stores the new
// entries by a compare-and-swap on their revision; when another write came
// first it judges again on the new entries. It returns a *budgetError when
// the backend is in service and no disruption is allowed (unless force),
// pool.ErrUnknownBackend, a *storeError, or errContended when every
// attempt lost to another writer; in each case nothing changed.
func (m *Manager) enter(ctx context.Context, e entries.Entry, force bool) (grant, error) {
	st := m.base()
	for range maxSwapAttempts {
		now := m.now()
		entries := unexpired(st.Entries, now)
		budget, inService, err := m.pool.BudgetWith(entries, e.Backend)
		if err != nil {
			return grant{}, err
		}
		forced := false
		if inService && budget.DisruptionsAllowed == 0 {
			if !force {
				return grant{}, &budgetError{Budget: budget}
			}
			forced = true
		}
		entry := e
		entry.Since = now
		if i := indexOf(entries, e.Backend); i >= 0 {
			entry.Since = entries[i].Since
			entries = slices.Delete(slices.Clone(entries), i, i+1)
		}
		next := sorted(append(slices.Clone(entries), entry))
		rev, err := m.swap(ctx, st.Revision, next)
		if errors.Is(err, store.ErrConflict) {
			if st, err = m.refresh(ctx); err != nil {
				return grant{}, &storeError{Kind: m.store.Kind(), Err: err}
			}
			continue
		}
		if err != nil {
			return grant{}, &storeError{Kind: m.store.Kind(), Err: err}
		}
		m.written(store.State{Entries: next, Revision: rev})
		after, _, _ := m.pool.BudgetWith(next, e.Backend)
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
// was an entry and whether its end is stored. With a shared store an end
// that cannot be stored is refused (*storeError), or the replicas would
// disagree; with a store of this replica's own the end takes effect at
// once and its save is retried until it succeeds.
func (m *Manager) exit(ctx context.Context, name string) (existed, saved bool, err error) {
	st := m.base()
	for range maxSwapAttempts {
		entries := unexpired(st.Entries, m.now())
		i := indexOf(entries, name)
		if i < 0 {
			if _, _, err := m.pool.BudgetWith(nil, name); err != nil {
				return false, false, err
			}
			return false, true, nil
		}
		next := slices.Delete(slices.Clone(entries), i, i+1)
		rev, err := m.swap(ctx, st.Revision, next)
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
		m.written(store.State{Entries: next, Revision: rev})
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
	m.pool.SetMaintenance(entries)
	level.Error(m.logger).Log("msg", "Maintenance ended here but not saved; retrying until the store takes it", "store", m.store.Kind(), "err", err)
}

// Run keeps the replica's entries in step with the store until ctx ends:
// it applies every change the store's watch announces, reads the store
// every few seconds, removes the entries whose Until has come (every
// replica ends them at that time on its own; the removal only tidies the
// store), and retries saves that failed, with back-off. At the end it
// tries a pending save once more.
func (m *Manager) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { m.store.Watch(ctx, m.apply) })
	defer wg.Wait()
	retry, delay := time.Time{}, minRetry
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	lastResync := time.Now()
	for {
		select {
		case <-ctx.Done():
			m.flush(context.Background())
			return
		case <-ticker.C:
		}
		if time.Since(lastResync) >= resyncInterval {
			lastResync = time.Now()
			if st, err := m.load(ctx); err == nil {
				m.apply(st)
			}
		}
		if !m.pending() || time.Now().Before(retry) {
			continue
		}
		if err := m.tidy(ctx); err != nil {
			retry, delay = time.Now().Add(delay), min(2*delay, maxRetry)
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
	return m.dirty || len(unexpired(m.state.Entries, m.now())) != len(m.state.Entries)
}

// tidy stores the entries in force here without the expired ones.
func (m *Manager) tidy(ctx context.Context) error {
	for range maxSwapAttempts {
		st := m.base()
		next := unexpired(st.Entries, m.now())
		rev, err := m.swap(ctx, st.Revision, next)
		if errors.Is(err, store.ErrConflict) {
			if _, err := m.refresh(ctx); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		m.written(store.State{Entries: next, Revision: rev})
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

// unexpired returns the entries still in force at now; the slice may be
// in itself.
func unexpired(in []entries.Entry, now time.Time) []entries.Entry {
	if !slices.ContainsFunc(in, func(e entries.Entry) bool { return e.Expired(now) }) {
		return in
	}
	return slices.DeleteFunc(slices.Clone(in), func(e entries.Entry) bool { return e.Expired(now) })
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
