package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	sd "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/targetgroup"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// Discovery runs Prometheus service discovery and keeps the last target
// groups of every mechanism. A source that fails sends no update, so the
// groups it last sent stay: discovery errors never empty the pool.
type Discovery struct {
	manager *sd.Manager
	logger  log.Logger

	backends *prometheus.GaugeVec
	clashes  prometheus.Counter

	mu     sync.Mutex
	groups map[string][]*targetgroup.Group
	// warned are the problems logged while they last: a clash or a bad
	// target is logged once, not at every update.
	warned map[string]bool
}

// New builds the discovery manager, which runs until ctx ends, with its
// prometheus_sd_* metrics and probegate's own on reg. options are the
// manager's, such as sd.Updatert.
func New(ctx context.Context, logger log.Logger, slogger *slog.Logger, reg prometheus.Registerer, options ...func(*sd.Manager)) (*Discovery, error) {
	sdMetrics, err := sd.CreateAndRegisterSDMetrics(reg)
	if err != nil {
		return nil, err
	}
	manager := sd.NewManager(ctx, slogger, reg, sdMetrics, append([]func(*sd.Manager){sd.Name("backends")}, options...)...)
	if manager == nil {
		return nil, errors.New("cannot create the service discovery manager (its metrics did not register)")
	}
	d := &Discovery{
		manager: manager,
		logger:  logger,
		backends: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "probegate_discovered_backends",
			Help: "Backends in the pool that service discovery found, by mechanism.",
		}, []string{"mechanism"}),
		clashes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "probegate_discovery_name_clashes_total",
			Help: "Discovered backends left out because a static or earlier discovered backend has their name; each clash counts once while it lasts.",
		}),
		groups: map[string][]*targetgroup.Group{},
		warned: map[string]bool{},
	}
	for _, m := range mechanisms {
		d.backends.WithLabelValues(m.name)
	}
	if err := reg.Register(d.backends); err != nil {
		return nil, err
	}
	if err := reg.Register(d.clashes); err != nil {
		return nil, err
	}
	return d, nil
}

// ApplyConfig starts, keeps or stops the discoverers to match cfg's
// discovery blocks; unchanged ones keep running and keep their targets.
func (d *Discovery) ApplyConfig(cfg *config.Config) error {
	return d.manager.ApplyConfig(Configs(cfg))
}

// Run receives the manager's updates until its context ends, calling
// updated after each one. The manager batches updates: at most one every
// few seconds (sd.Updatert).
func (d *Discovery) Run(updated func()) {
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.manager.Run() })
	defer wg.Wait()
	for groups := range d.manager.SyncCh() {
		d.mu.Lock()
		d.groups = groups
		d.mu.Unlock()
		updated()
	}
}

// Targets are the pool's targets under cfg: its static backends and the
// backends the last discovery results make, a static backend winning a
// name clash. It sets probegate_discovered_backends, and logs and counts
// clashes and unusable targets once while they last.
func (d *Discovery) Targets(cfg *config.Config) []pool.Target {
	d.mu.Lock()
	defer d.mu.Unlock()
	found := make(map[string][]pool.Target, len(mechanisms))
	warned := map[string]bool{}
	for _, m := range mechanisms {
		targets, errs := discovered(d.groups[m.name], cfg)
		found[m.name] = targets
		for _, err := range errs {
			if msg := err.Error(); !d.warned[msg] && !warned[msg] {
				level.Warn(d.logger).Log("msg", "Discovered target is not a backend", "mechanism", m.name, "err", msg)
			}
			warned[err.Error()] = true
		}
	}
	targets, count, clashes := merge(Static(cfg), found)
	for _, c := range clashes {
		key := fmt.Sprintf("clash %s %s %s", c.mechanism, c.name, c.by)
		if !d.warned[key] && !warned[key] {
			level.Warn(d.logger).Log("msg", "Discovered backend left out: its name is taken", "backend", c.name, "mechanism", c.mechanism, "taken_by", c.by)
			d.clashes.Inc()
		}
		warned[key] = true
	}
	d.warned = warned
	for m, n := range count {
		d.backends.WithLabelValues(m).Set(float64(n))
	}
	return targets
}
