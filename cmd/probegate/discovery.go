package main

import (
	"context"
	"sync"

	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	sd "github.com/prometheus/prometheus/discovery"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// startDiscovery starts service discovery with cfg's sources, rebuilding
// the pool at each update it brings, until shutdown. Discovered backends
// join at the first update, within moments of the start.
func (s *server) startDiscovery(cfg *config.Config, reg prometheus.Registerer) error {
	ctx, cancel := context.WithCancel(context.Background())
	d, err := discovery.New(ctx, s.logger, slogFromGokit(s.logger), reg, sd.Updatert(s.opts.DiscoveryUpdateInterval))
	if err != nil {
		cancel()
		return err
	}
	s.sd = d
	if err := d.ApplyConfig(cfg); err != nil {
		cancel()
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { d.Run(s.discoveryUpdated) })
	s.gate.OnShutdown(func(context.Context) {
		cancel()
		wg.Wait()
	})
	return nil
}

// discoveryUpdated rebuilds the pool from the configuration in force and
// the new discovery results. Backends that stay keep their state.
func (s *server) discoveryUpdated() {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	if err := s.applyTargets(s.running.Load()); err != nil {
		level.Error(s.logger).Log("msg", "Cannot apply the discovered backends; keeping the pool as it is", "err", err)
	}
}

// applyTargets rebuilds the pool from cfg's static backends and the last
// discovery results, and has discovery follow cfg's sources. It is called
// with applyMu held.
func (s *server) applyTargets(cfg *config.Config) error {
	if err := refuseSelfTargets(s.self.Load(), cfg); err != nil {
		return err
	}
	if err := s.pool.Apply(s.sd.Targets(cfg), pool.SettingsOf(cfg)); err != nil {
		return err
	}
	s.prober.Sync()
	if cfg != s.running.Load() {
		s.running.Store(cfg)
		if err := s.sd.ApplyConfig(cfg); err != nil {
			return err
		}
	}
	return nil
}
