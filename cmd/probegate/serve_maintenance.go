package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"
	"go.yaml.in/yaml/v3"

	"github.com/probegate/probegate/collector"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/gate"
)

// maintenanceService is maintenance as one replica runs it: the store the
// configuration names, the manager that keeps the pool in step with it,
// and, with a shared store, this replica's view among its peers.
type maintenanceService struct {
	store    store.Store
	manager  *maintenance.Manager
	replicas *maintenance.Replicas // nil unless the store is shared
	// settings is the maintenance block the store was opened with: a
	// reload may not change it.
	settings config.Maintenance
}

// openMaintenance opens the configured store and applies its entries to
// the pool. A file store that cannot be read stops start-up, and nothing
// overwrites it; an etcd cluster that cannot be reached does not (the
// replica serves, refuses writes and keeps trying).
func openMaintenance(opts *options, cfg *config.Config, p *pool.Pool, reg prometheus.Registerer, logger log.Logger, now func() time.Time) (*maintenanceService, error) {
	svc := &maintenanceService{settings: cfg.Maintenance}
	var err error
	if svc.store, err = store.Open(cfg.Maintenance, opts.storageDir(), opts.EnableAdminAPI); err != nil {
		return nil, err
	}
	var applied *store.Applied
	if svc.store.Shared() {
		applied = store.NewApplied(opts.storageDir(), store.SourceOf(cfg.Maintenance))
	}
	svc.manager = maintenance.NewManager(p, svc.store, applied, reg, logger, now)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.Maintenance.Etcd.RequestTimeout)+time.Second)
	defer cancel()
	if err := svc.manager.Start(ctx); err != nil {
		if !svc.store.Shared() {
			svc.store.Close()
			return nil, err
		}
		level.Warn(logger).Log("msg", "Cannot read the maintenance store; serving without its entries until it answers", "store", svc.store.Kind(), "err", err)
	}
	if entries := p.Maintenances(); len(entries) > 0 && !opts.EnableAdminAPI {
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Backend
		}
		level.Warn(logger).Log("msg", "Backends are in maintenance but the admin API is off: nothing here can end it before its ttl",
			"backends", strings.Join(names, ","), "hint", "enable --web.enable-admin-api, or run probegate maintenance stop NAME --storage.path DIR while probegate is stopped")
	}
	return svc, nil
}

// startReplicas publishes this replica's view when the store is shared.
func (svc *maintenanceService) startReplicas(name string, g *gate.Gate, p *pool.Pool, reg prometheus.Registerer, logger log.Logger, now func() time.Time) {
	registry, ok := svc.store.(maintenance.Registry)
	if !ok {
		return
	}
	self := func(ctx context.Context) maintenance.ReplicaView {
		b := p.Budget()
		return maintenance.ReplicaView{Name: name, Version: version.Version, Ready: g.Ready(ctx), BudgetHolds: b.Holds(),
			Draining: g.Draining(), Expected: b.Expected, InService: b.CurrentHealthy, DisruptionsAllowed: b.DisruptionsAllowed}
	}
	svc.replicas = maintenance.NewReplicas(registry, self, reg, logger, now)
}

// registerReadiness adds the gate's maintenance_store check when the
// store is shared: a replica that has neither read the store nor saved a
// state of it does not know which backends are out, so it is not ready
// until the first read succeeds. A replica serving a saved state is
// ready; its state is marked stale.
func (svc *maintenanceService) registerReadiness(g *gate.Gate) {
	if !svc.store.Shared() {
		return
	}
	g.RegisterWithOutput("maintenance_store", func(context.Context) (string, error) {
		st := svc.manager.Status()
		switch {
		case !st.Synced:
			return "", errors.New("not synced with the store yet")
		case st.Stale:
			return "stale: serving the last applied state until the store answers", nil
		}
		return "synced", nil
	})
}

// healthzStore reports the store's health in /healthz when the store is
// shared; nil otherwise.
func (svc *maintenanceService) healthzStore() func() collector.HealthzStore {
	if !svc.store.Shared() {
		return nil
	}
	return func() collector.HealthzStore {
		st := svc.manager.Status()
		h := collector.HealthzStore{Kind: st.Kind, Healthy: st.Healthy, Stale: st.Stale}
		if !st.LastSync.IsZero() {
			h.LastSync = st.LastSync.UTC().Format(time.RFC3339Nano)
		}
		return h
	}
}

// liveReplicas lists the live replicas for the status page; nil when the
// store is not shared.
func (svc *maintenanceService) liveReplicas() func() []maintenance.ReplicaView {
	if svc.replicas == nil {
		return nil
	}
	return svc.replicas.Live
}

// run keeps the entries in step with the store, and publishes the replica
// view, until ctx ends.
func (svc *maintenanceService) run(ctx context.Context) {
	done := make(chan struct{})
	if svc.replicas != nil {
		go func() { defer close(done); svc.replicas.Run(ctx) }()
	} else {
		close(done)
	}
	svc.manager.Run(ctx)
	<-done
	svc.store.Close()
}

// api is the admin API over the service; the demo serves it to loopback
// clients only.
func (svc *maintenanceService) api(opts *options, cfg *config.Config, logger log.Logger) (*maintenance.API, error) {
	authenticated, err := webConfigAuthenticates(opts.WebConfigFile)
	if err != nil {
		return nil, err
	}
	apiOpts := maintenance.APIOptions{Enabled: opts.EnableAdminAPI, LoopbackOnly: opts.adminLoopbackOnly,
		Authenticated: authenticated, MaxTTL: time.Duration(cfg.Maintenance.MaxTTL)}
	apiOpts.Replicas = svc.liveReplicas()
	return maintenance.NewAPI(svc.manager, apiOpts, logger), nil
}

// checkReload refuses a configuration that changes the store: the
// replica's entries and its peers come from it, so a restart applies it.
func (svc *maintenanceService) checkReload(cfg *config.Config) error {
	return store.CheckReload(svc.settings, cfg.Maintenance)
}

// webConfigAuthenticates reports whether the web configuration file makes
// every client authenticate with basic auth: only then is the user name
// of a request a verified one.
func webConfigAuthenticates(path string) (bool, error) {
	if path == "" {
		return false, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("--web.config.file: %w", err)
	}
	var wc struct {
		Users map[string]string `yaml:"basic_auth_users"`
	}
	if err := yaml.Unmarshal(data, &wc); err != nil {
		return false, fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	return len(wc.Users) > 0, nil
}
