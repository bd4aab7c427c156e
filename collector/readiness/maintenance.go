package readiness

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/exporter"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/gate"
)

// Options are what Open needs besides the configuration and the pool.
type Options struct {
	// Replica is this replica's name among its peers.
	Replica string
	// Listeners are where this replica listens, published in its view
	// so that its peers take a backend there for a loop.
	Listeners *maintenance.ReplicaListeners
	// StorageDir is where a file store keeps its entries, and a shared
	// store the state it last applied.
	StorageDir string
	// AdminAPI is set when the admin API is on: only then can entries
	// be written, or ended before their ttl.
	AdminAPI bool
	// Registerer takes the metrics of maintenance, its store, the replica
	// views and the peer override; it is required.
	Registerer prometheus.Registerer
	Logger     log.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Maintenance is maintenance as one replica runs it: the store the
// configuration names, the manager that keeps the pool in step with it,
// and, with a shared store, this replica's view among its peers.
type Maintenance struct {
	pool     *pool.Pool
	store    store.Store
	manager  *maintenance.Manager
	replicas *maintenance.Replicas // nil unless the store is shared
	// settings is the maintenance block the store was opened with: a
	// reload may not change it.
	settings config.Maintenance
	opts     Options
	// alongside runs beside the replica views while the store is open
	// (ShareWith).
	alongside func(ctx context.Context, shared SharedStore)
}

// Open opens the configured store and applies its entries to p. A file
// store, local and owned by this replica, is read at once, and one that
// cannot be read is an error: nothing overwrites it. A shared store is
// not waited for: Open applies the state this replica saved, marked
// stale, and Run reads the store in the background, so that the replica
// listens at once however long the store takes to answer, or whether it
// answers at all. Until the first read has finished the replica routes
// by its saved state but fails its maintenance_store check; once that
// read failed, a replica with a saved state is ready on it, one without
// is not (storeCheck).
//
// Serving the saved state before the store confirms it is the
// conservative order: an entry another replica still has in force keeps
// its backend out here too. An entry that ended while this replica was
// down holds its backend out until the first read, which is moments on a
// reachable store; a backend probed meanwhile then earns its readmission.
// An entry granted while it was down is not in force here until that
// read, which is why the replica is not ready until it has finished.
func Open(cfg config.Maintenance, p *pool.Pool, o Options) (*Maintenance, error) {
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m := &Maintenance{pool: p, settings: cfg, opts: o}
	var err error
	if m.store, err = store.Open(cfg, o.StorageDir, o.AdminAPI); err != nil {
		return nil, err
	}
	var applied *store.Applied
	if m.store.Shared() {
		applied = store.NewApplied(o.StorageDir, store.SourceOf(cfg))
	}
	m.manager = maintenance.NewManager(p, m.store, applied, o.Registerer, o.Logger, o.Now)
	if m.store.Shared() {
		m.manager.Restore()
	} else if err := m.manager.Start(context.Background()); err != nil {
		m.store.Close()
		return nil, err
	}
	if entries := p.Maintenances(); len(entries) > 0 && !o.AdminAPI {
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Backend
		}
		level.Warn(o.Logger).Log("msg", "Backends are in maintenance but the admin API is off: nothing here can end it before its ttl",
			"backends", strings.Join(names, ","), "hint", "enable --web.enable-admin-api, or run probegate maintenance stop NAME --storage.path DIR while probegate is stopped")
	}
	return m, nil
}

// RegisterChecks adds this replica's readiness checks to g and, with a
// shared store, starts sharing its view with its peers (Run publishes
// it):
//   - backends: the pool's readiness budget (budgetCheck), which fails
//     while discovery has not delivered its first targets, and with a
//     shared store and peerRelative() true fails only when a live peer is
//     better off;
//   - group_budget: the replica groups' budgets (readiness.per_group,
//     groupBudgetCheck), which fails while a group is below its own, and
//     with a shared store and peerRelative() true only when a live peer's
//     groups hold theirs;
//   - maintenance_store, with a shared store (storeCheck): not ready
//     until the first read of the store has finished, and then, without
//     a saved state, until a read succeeds.
func (m *Maintenance) RegisterChecks(g *gate.Gate, peerRelative func() bool) {
	var peers peerViews
	var gauge prometheus.Gauge
	if registry, ok := m.store.(maintenance.Registry); ok {
		self := func(ctx context.Context) maintenance.ReplicaView {
			return selfView(m.opts.Replica, m.opts.Listeners, m.pool.Budget(), m.pool.GroupBudgets(), m.pool.Awaited(), g.Ready(ctx), g.Draining())
		}
		m.replicas = maintenance.NewReplicas(registry, self, m.opts.Registerer, m.opts.Logger, m.opts.Now)
		peers = func() ([]maintenance.ReplicaView, bool) { return m.replicas.Peers(m.opts.Replica) }
		gauge = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "probegate_readiness_peer_override",
			Help: "Whether this replica stays ready although its readiness budget or a replica group's does not hold, because no live peer's holds either (1) or not (0).",
		})
		m.opts.Registerer.MustRegister(gauge)
	}
	override := newPeerOverride(peers, peerRelative, gauge)
	g.RegisterWithOutput("backends", budgetCheck(m.pool.Budget, m.pool.AwaitedDiscovery, override))
	g.RegisterWithOutput("group_budget", groupBudgetCheck(m.pool.GroupBudgets, override))
	if !m.store.Shared() {
		return
	}
	g.RegisterWithOutput("maintenance_store", func(context.Context) (string, error) {
		// Read in this order, a finished first read is never paired
		// with the status from before it.
		done := m.manager.FirstReadDone()
		return storeCheck(done, m.manager.Status())
	})
}

// storeCheck is the maintenance_store check of a replica sharing a store,
// from whether its first read of the store has finished and the store's
// status. Until the first read has finished the replica is not ready,
// even with a saved state: an entry granted while it was down is in force
// on its peers and not here, and a read of a reachable store takes
// moments. The saved state is served for routing meanwhile, the
// conservative direction. Once the first read has failed (the store
// cannot be reached, within request_timeout), a replica with a saved
// state is ready on it, marked stale; one without is not ready until a
// read succeeds, since it does not know which backends are out.
func storeCheck(firstReadDone bool, st maintenance.StoreStatus) (string, error) {
	switch {
	case !firstReadDone:
		return "", errors.New("reading the store for the first time")
	case !st.Synced:
		return "", errors.New("not synced with the store yet")
	case st.Stale:
		return "stale: serving the last applied state until the store answers", nil
	}
	return "synced", nil
}

// Status is the store's health and the state in force, for the pages.
func (m *Maintenance) Status() maintenance.StoreStatus { return m.manager.Status() }

// HealthzStore reports the store's health in /healthz when the store is
// shared; nil otherwise.
func (m *Maintenance) HealthzStore() func() exporter.HealthzStore {
	if !m.store.Shared() {
		return nil
	}
	return func() exporter.HealthzStore {
		st := m.manager.Status()
		h := exporter.HealthzStore{Kind: st.Kind, Healthy: st.Healthy, Stale: st.Stale}
		if !st.LastSync.IsZero() {
			h.LastSync = st.LastSync.UTC().Format(time.RFC3339Nano)
		}
		return h
	}
}

// LiveReplicas lists the live replicas, and for a while those whose lease
// lapsed, marked stale, for the status page and the admin API; nil when
// the store is not shared. The views exist once
// RegisterChecks has given them the gate whose readiness they publish,
// so it is called after it.
func (m *Maintenance) LiveReplicas() func() []maintenance.ReplicaView {
	if m.replicas == nil {
		return nil
	}
	return m.replicas.Live
}

// FollowPeerListeners has f given the listeners of the peers' views
// whenever they change (maintenance.Replicas.FollowPeerListeners); with a
// store that is not shared there are no peers, and f is never called.
// Call it after RegisterChecks and before Run.
func (m *Maintenance) FollowPeerListeners(f func([]maintenance.ReplicaListeners)) {
	if m.replicas != nil {
		m.replicas.FollowPeerListeners(m.opts.Replica, f)
	}
}

// Run keeps the entries in step with the store, and publishes the replica
// view, until ctx ends; then it closes the store.
func (m *Maintenance) Run(ctx context.Context) {
	done := make(chan struct{})
	if m.replicas != nil {
		go func() { defer close(done); m.replicas.Run(ctx) }()
	} else {
		close(done)
	}
	var shared sync.WaitGroup
	if verdicts, ok := m.store.(store.Verdicts); ok && m.alongside != nil && m.replicas != nil {
		shared.Go(func() {
			m.alongside(ctx, SharedStore{Verdicts: verdicts, Members: m.replicas.LiveNames, ReadSoon: m.replicas.ReadSoon})
		})
	}
	m.manager.Run(ctx)
	<-done
	shared.Wait()
	m.store.Close()
}

// SharedStore is what shared probing takes from the shared store: the
// verdicts, and the replica views' live names (maintenance.Replicas's
// LiveNames and ReadSoon).
type SharedStore struct {
	Verdicts store.Verdicts
	Members  func() ([]string, time.Time)
	ReadSoon func()
}

// ShareWith has run run beside the replica views, from Run until its ctx
// ends, with the shared store: the store is closed only after run
// returned. It runs only with a shared store, of which the replicas
// publish their views; call it after RegisterChecks and before Run.
func (m *Maintenance) ShareWith(run func(ctx context.Context, shared SharedStore)) {
	m.alongside = run
}

// API is the admin API over this replica's maintenance, with o's
// settings and the live replicas.
func (m *Maintenance) API(o maintenance.APIOptions) *maintenance.API {
	o.Replicas = m.LiveReplicas()
	return maintenance.NewAPI(m.manager, o, m.opts.Logger)
}

// CheckReload refuses a configuration that changes the store: the
// replica's entries and its peers come from it, so a restart applies it.
func (m *Maintenance) CheckReload(cfg config.Maintenance) error {
	return store.CheckReload(m.settings, cfg)
}
