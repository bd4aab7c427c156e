// Package reconcile keeps the pool, and the prober that probes it, in step
// with what should be probed: the static backends of the configuration in
// force and the targets service discovery found last. A reload and a
// discovery update are two ways into the same step, and this is the one
// place that takes it: the pool is rebuilt (Pool.Apply) and then the
// prober picks up its backends (Prober.Sync), one step at a time.
//
// The arrows: reconcile imports discovery, pool and probe; none of them
// imports it. The command builds one Reconciler and calls Apply on a
// reload; Run applies discovery's updates.
package reconcile

import (
	"sync"
	"sync/atomic"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/probe"
	"github.com/probegate/probegate/config"
)

// Reconciler rebuilds the pool from the running configuration and the
// last discovery results, and has the prober follow. It is safe for
// concurrent use.
type Reconciler struct {
	pool   *pool.Pool
	prober *probe.Prober
	sd     *discovery.Discovery
	logger log.Logger

	// mu makes a reload and a discovery update one at a time: each reads
	// the configuration in force and rebuilds the pool from it, so an
	// update that read the configuration before a reload must not apply
	// its targets after it.
	mu sync.Mutex
	// running is the configuration in force; it is stored under mu and
	// read without it.
	running atomic.Pointer[config.Config]
	// delivered is set, under mu, once every discovery block of the
	// configuration in force has delivered and the pool holds its
	// targets: until then the pool waits for them (Pool.AwaitDiscovery).
	delivered bool
}

// New is a Reconciler over p, whose prober is pr, with cfg in force (the
// configuration p was built from) and sd following cfg's sources. The
// pool waits for cfg's discovery blocks from now until each has
// delivered and the pool holds their targets.
func New(p *pool.Pool, pr *probe.Prober, sd *discovery.Discovery, cfg *config.Config, logger log.Logger) *Reconciler {
	r := &Reconciler{pool: p, prober: pr, sd: sd, logger: logger}
	r.running.Store(cfg)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.awaitDiscovery(sd.Undelivered(cfg))
	return r
}

// Running is the configuration in force: the one New was given or the
// last one Apply accepted.
func (r *Reconciler) Running() *config.Config { return r.running.Load() }

// Apply puts cfg in force: the pool becomes cfg's static backends and the
// backends the last discovery results make under cfg, the prober follows,
// and discovery follows cfg's sources from now on. Backends that stay keep
// their state. When the pool refuses the targets nothing changes and cfg
// is not in force; when discovery cannot follow cfg's sources, cfg is in
// force with the pool rebuilt, and the error says so.
func (r *Reconciler) Apply(cfg *config.Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.apply(cfg)
}

// Run applies every discovery update, until discovery's context ends.
func (r *Reconciler) Run() {
	r.sd.Run(r.refresh)
}

// DetectLoops has every discovered target whose URL isLoop reports as
// leading back to one of probegate's own listeners dropped, and applies the last
// discovery results again under the rule: an update delivered before the
// rule was known is not left standing.
func (r *Reconciler) DetectLoops(isLoop func(backendURL string) bool) {
	r.sd.DetectLoops(isLoop)
	r.refresh()
}

// refresh rebuilds the pool from the configuration in force and the last
// discovery results. A failure keeps the pool as it is: the next update
// or reload tries again.
func (r *Reconciler) refresh() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.apply(r.running.Load()); err != nil {
		level.Error(r.logger).Log("msg", "Cannot apply the discovered backends; keeping the pool as it is", "err", err)
	}
}

// apply is Apply with mu held. The prober is synced after every rebuild
// of the pool: that is what this type is for.
func (r *Reconciler) apply(cfg *config.Config) error {
	// Asked before the targets are: a block that delivers in between is
	// in the targets, and waited for once more at worst.
	undelivered := r.sd.Undelivered(cfg)
	if err := r.pool.Apply(r.sd.Targets(cfg), pool.SettingsOf(cfg)); err != nil {
		return err
	}
	r.awaitDiscovery(undelivered)
	r.prober.Sync()
	if cfg != r.running.Load() {
		r.running.Store(cfg)
		if err := r.sd.ApplyConfig(cfg); err != nil {
			return err
		}
	}
	return nil
}

// awaitDiscovery tells the pool which discovery blocks it waits for, until
// the first time there is none: the pool is known from then on, and a
// block a reload adds later is not waited for (its targets join when it
// delivers, as a discovery update's do). Call it with mu held.
func (r *Reconciler) awaitDiscovery(undelivered []string) {
	if r.delivered {
		return
	}
	r.pool.AwaitDiscovery(undelivered)
	r.delivered = len(undelivered) == 0
}
