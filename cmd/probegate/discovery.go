package main

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	sd "github.com/prometheus/prometheus/discovery"

	"github.com/probegate/probegate/cmd/probegate/internal/logging"
	"github.com/probegate/probegate/cmd/probegate/internal/reconcile"
	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/config"
)

// startDiscovery starts service discovery with cfg's sources, and the
// reconciler that rebuilds the pool at each update it brings and at each
// reload; stop ends both. Discovered backends join at the first update,
// within moments of the start.
func (s *server) startDiscovery(cfg *config.Config, reg prometheus.Registerer) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	d, err := discovery.New(ctx, s.logger, logging.Slog(s.logger), reg, sd.Updatert(s.opts.DiscoveryUpdateInterval))
	if err != nil {
		cancel()
		return nil, err
	}
	if err := d.ApplyConfig(cfg); err != nil {
		cancel()
		return nil, err
	}
	s.sd = d
	s.targets = reconcile.New(s.pool, s.prober, d, cfg, s.logger)
	var wg sync.WaitGroup
	wg.Go(s.targets.Run)
	return func() {
		cancel()
		wg.Wait()
	}, nil
}
