package discovery

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	sd "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/targetgroup"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/redact"
)

// Discovery runs Prometheus service discovery and keeps the last target
// groups of every mechanism. A source that fails sends no update, so the
// groups it last sent stay: discovery errors never empty the pool.
type Discovery struct {
	manager *sd.Manager
	logger  log.Logger

	backends *prometheus.GaugeVec
	clashes  prometheus.Counter
	dropped  *prometheus.CounterVec

	mu sync.Mutex
	// groups are the last groups the manager reported of each target
	// set, one set per discovery block (sdConfigs), once the set's
	// discoverer has delivered (deliveries): the manager reports a set
	// its discoverer has not delivered yet as empty. A set the manager
	// no longer serves is kept while its block stands in for the block
	// that replaced it (groupsOf).
	groups     map[string][]*targetgroup.Group
	deliveries *deliveries
	// update counts the manager's updates; reported is the update and the
	// configuration whose drops were last logged and counted, so that
	// each is reported once per update, not at every call of Targets.
	update, reportedUpdate uint64
	reportedCfg            *config.Config
	// sources are what the last call of Targets made of each mechanism's
	// targets, and cfg the configuration it was made under, for the
	// discovery view.
	sources []*source
	cfg     *config.Config
	// prev is the configuration before cfg while cfg is new: until the
	// manager has reported every block of cfg, the blocks of prev that
	// cfg replaced stand in for theirs (groupsOf).
	prev *config.Config
	// clashed are the name clashes of the last call of Targets: a clash
	// is logged and counted once while it lasts. There are at most as
	// many as discovered backends, which the limit bounds.
	clashed map[clash]bool
	// staticLoops are the static backends the last call of Targets left
	// out as loops, by name, so that each is logged once while it lasts.
	staticLoops map[string]bool
	// isLoop reports a backend URL that points at probegate's own
	// fan-out; nil reports none.
	isLoop func(backendURL string) bool
}

// New builds the discovery manager, which runs until ctx ends, with its
// prometheus_sd_* metrics and probegate's own on reg. options are the
// manager's, such as sd.Updatert.
func New(ctx context.Context, logger log.Logger, slogger *slog.Logger, reg prometheus.Registerer, options ...func(*sd.Manager)) (*Discovery, error) {
	sdMetrics, err := sd.CreateAndRegisterSDMetrics(reg)
	if err != nil {
		return nil, err
	}
	// A discovery file's parser quotes the file in its errors: they are
	// logged without it.
	slogger = slog.New(contentlessHandler{slogger.Handler()})
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
			Help: "Discovered backends left out because a static or earlier discovered backend has their name, or because a replica group and a backend outside it would share a name; each clash counts once while it lasts.",
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probegate_discovery_dropped_targets_total",
			Help: "Discovered targets that did not become backends, counted at each discovery update that drops them, by reason (relabel, invalid, name_clash, limit, loop).",
		}, []string{"reason"}),
		groups:     map[string][]*targetgroup.Group{},
		deliveries: &deliveries{},
		clashed:    map[clash]bool{},
	}
	for _, m := range mechanisms {
		d.backends.WithLabelValues(m.name)
	}
	for _, reason := range dropReasons {
		d.dropped.WithLabelValues(reason)
	}
	for _, c := range []prometheus.Collector{d.backends, d.clashes, d.dropped} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// DetectLoops has every discovered target whose URL isLoop reports as
// pointing at one of probegate's own listeners, or a peer replica's,
// dropped (reason "loop") from the next call of Targets on. nil, the
// default, reports none. A new rule changes what the last update comes
// to, as a new configuration does, so the next call of Targets reports
// and counts its drops again.
func (d *Discovery) DetectLoops(isLoop func(backendURL string) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.isLoop = isLoop
	d.reportedCfg = nil
}

// ApplyConfig starts, keeps or stops the discoverers to match cfg's
// discovery blocks; unchanged ones keep running and keep their targets.
// The groups of a set whose discoverer the manager (re)started are
// forgotten until it delivers, but those of the configuration in force
// before stay, to stand in for the blocks cfg replaced.
func (d *Discovery) ApplyConfig(cfg *config.Config) error {
	sets := sdConfigs(cfg)
	for set, configs := range sets {
		for i, c := range configs {
			configs[i] = deliveringConfig{Config: c, set: set, deliveries: d.deliveries}
		}
	}
	if err := d.manager.ApplyConfig(sets); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	standIns := map[string]bool{}
	for _, c := range []*config.Config{d.prev, d.cfg} {
		if c != nil && c != cfg {
			for _, e := range entries(c) {
				standIns[e.set] = true
			}
		}
	}
	for set := range d.groups {
		if _, ours := sets[set]; ours && !d.deliveries.hasDelivered(set) || !ours && !standIns[set] {
			delete(d.groups, set)
		}
	}
	d.deliveries.forget(func(set string) bool { _, ours := sets[set]; return ours })
	return nil
}

// Run receives the manager's updates until its context ends, calling
// updated after each one. The manager batches updates: at most one every
// few seconds (sd.Updatert).
func (d *Discovery) Run(updated func()) {
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.manager.Run() })
	defer wg.Wait()
	for groups := range d.manager.SyncCh() {
		d.received(groups)
		updated()
	}
}

// received keeps an update of the manager.
func (d *Discovery) received(groups map[string][]*targetgroup.Group) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for set, g := range groups {
		// An empty set whose discoverer has not delivered is one the
		// manager has not heard from yet, not one found empty.
		if len(g) > 0 || d.deliveries.hasDelivered(set) {
			d.groups[set] = g
		}
	}
	d.update++
}

// Undelivered names cfg's discovery blocks (file_sd_configs[0], …) whose
// discoverer has not delivered its first targets, in the configuration's
// order; none when every block has, or cfg has none. Asked before
// Targets, it says whether the targets Targets returns are every block's:
// a block delivered in between is only the better for it.
func (d *Discovery) Undelivered(cfg *config.Config) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var blocks []string
	for _, e := range entries(cfg) {
		if _, reported := d.groups[e.set]; !reported {
			blocks = append(blocks, e.field)
		}
	}
	return blocks
}

// Targets are the pool's targets under cfg: its static backends and the
// backends the last discovery results make, a static backend winning a
// name clash. It sets probegate_discovered_backends and keeps what
// became of every target for the discovery view. The drops of an update
// (or of a new configuration) are counted, and logged as one line per
// mechanism and kind, once: a source listing a million bad targets
// costs a line, not a million.
func (d *Discovery) Targets(cfg *config.Config) []pool.Target {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cfg != d.cfg {
		d.prev, d.cfg = d.cfg, cfg
	}
	groups := d.groupsOf(cfg)
	sources := make([]*source, len(mechanisms))
	for i, m := range mechanisms {
		sources[i] = evaluateGroups(m.name, groups[i], cfg, d.isLoop)
	}
	static, leftOut := d.staticWithoutLoops(cfg)
	targets, clashes := merge(static, leftOut, sources)
	d.reportClashes(clashes)
	if d.update != d.reportedUpdate || cfg != d.reportedCfg {
		d.reportedUpdate, d.reportedCfg = d.update, cfg
		for _, s := range sources {
			d.report(s, cfg)
		}
	}
	d.sources = sources
	for _, s := range sources {
		d.backends.WithLabelValues(s.mechanism).Set(float64(len(s.backends)))
	}
	return targets
}

// groupsOf are the last discovery results of cfg's blocks, mechanism by
// mechanism, each group with the block (and file) it came from. Only the
// blocks cfg holds count: the targets of a block that a reload removed or
// changed are not cfg's, even while the manager has not yet stopped it,
// so that a reload changes the discovery blocks and relabel_configs
// together and never admits a target of a removed block under the new
// rules alone.
//
// A block the reload changed is a new set, which counts as reported only
// once its discoverer delivered. Until it has, the block it replaced (the
// one of the configuration before, prev, at the same place in the same
// list) stands in for it, its targets admitted only where both
// configurations keep them: the backends of a block whose refresh
// interval changed keep their state, and no target either configuration
// drops is admitted in between. A block the reload removed stands in for
// nothing. A replaced block whose successor never delivers stands in for
// it until it does, as a failing source keeps its last targets. Call it
// with mu held.
func (d *Discovery) groupsOf(cfg *config.Config) []mechanismGroups {
	out := make([]mechanismGroups, len(mechanisms))
	seen := map[string]bool{}
	replaced := map[string]entry{}
	if d.prev != nil {
		for _, e := range entries(d.prev) {
			replaced[e.field] = e
		}
	}
	var standIns []entry
	for _, e := range entries(cfg) {
		if _, reported := d.groups[e.set]; reported {
			continue
		}
		if old, ok := replaced[e.field]; ok && old.set != e.set {
			standIns = append(standIns, old)
		}
	}
	if len(standIns) == 0 && d.prev != nil {
		d.prev = nil
		d.forgetGroupsNotOf(cfg)
	}
	for _, e := range entries(cfg) {
		mg := &out[e.mechanism]
		o := origin{field: e.field, index: len(mg.blocks)}
		mg.blocks = append(mg.blocks, o)
		if seen[e.set] {
			// A block repeated word for word shares the first one's set.
			continue
		}
		seen[e.set] = true
		if mg.origins == nil {
			mg.origins = map[*targetgroup.Group]origin{}
		}
		fileOf := mechanisms[e.mechanism].fileOf
		for _, g := range d.groups[e.set] {
			if g == nil {
				continue
			}
			from := o
			if fileOf != nil {
				if file, _, ok := fileOf(g.Source); ok {
					from.file = file
				}
			}
			mg.origins[g] = from
			mg.groups = append(mg.groups, g)
		}
	}
	for _, e := range standIns {
		if seen[e.set] {
			continue
		}
		seen[e.set] = true
		mg := &out[e.mechanism]
		if mg.origins == nil {
			mg.origins = map[*targetgroup.Group]origin{}
		}
		if mg.alsoKeptBy == nil {
			mg.alsoKeptBy = map[*targetgroup.Group]*config.Config{}
		}
		fileOf := mechanisms[e.mechanism].fileOf
		for _, g := range d.groups[e.set] {
			if g == nil {
				continue
			}
			from := origin{field: e.field, index: len(mg.blocks)}
			if fileOf != nil {
				if file, _, ok := fileOf(g.Source); ok {
					from.file = file
				}
			}
			mg.origins[g] = from
			mg.alsoKeptBy[g] = d.prev
			mg.groups = append(mg.groups, g)
		}
	}
	return out
}

// forgetGroupsNotOf drops the groups of the sets cfg does not have, once
// no block of an older configuration stands in. Call it with mu held.
func (d *Discovery) forgetGroupsNotOf(cfg *config.Config) {
	ours := map[string]bool{}
	for _, e := range entries(cfg) {
		ours[e.set] = true
	}
	for set := range d.groups {
		if !ours[set] {
			delete(d.groups, set)
		}
	}
}

// report counts one mechanism's dropped targets and logs the invalid
// ones, the ones over the limit and the loops, each kind in one line.
func (d *Discovery) report(s *source, cfg *config.Config) {
	for reason, n := range s.counts {
		d.dropped.WithLabelValues(reason).Add(float64(n))
	}
	if n := s.counts[dropInvalid]; n > 0 {
		level.Warn(d.logger).Log("msg", "Discovered targets are not backends; left out", "mechanism", s.mechanism,
			"count", n, "examples", strings.Join(s.examples, "; "))
	}
	if n := s.counts[dropLimit]; n > 0 {
		level.Warn(d.logger).Log("msg", "Discovery found more backends than max_discovered_backends; left the rest out",
			"mechanism", s.mechanism, "max_discovered_backends", cfg.MaxDiscoveredBackends, "count", n)
	}
	if n := s.counts[dropLoop]; n > 0 {
		level.Warn(d.logger).Log("msg", "Discovered targets point at probegate's own listeners; left out", "mechanism", s.mechanism, "count", n)
	}
}

// staticWithoutLoops are cfg's static backends but those isLoop reports,
// and those it reports, each logged when it is first left out. The
// configuration check refuses a static backend at one of this replica's
// own listeners, so the ones left out here lead to a peer replica's: a
// listener the check could not know, learned from the peers' views once
// the configuration was in force. It cannot be refused then, and the
// check, which reads no store, cannot refuse it either without judging a
// file differently from check-config; so it is left out of the pool while
// a peer's view names its address, on every replica alike, and is back
// when none does. Call it with mu held.
func (d *Discovery) staticWithoutLoops(cfg *config.Config) (static, leftOut []pool.Target) {
	all := Static(cfg)
	if d.isLoop == nil {
		clear(d.staticLoops)
		return all, nil
	}
	static = all[:0:0]
	looped := map[string]bool{}
	for _, t := range all {
		if !d.isLoop(t.URL) {
			static = append(static, t)
			continue
		}
		leftOut = append(leftOut, t)
		looped[t.Name] = true
		if !d.staticLoops[t.Name] {
			level.Error(d.logger).Log("msg", "Static backend points at a peer replica's listener; left out of the pool while the peer's view says so",
				"backend", t.Name, "url", redact.URL(t.URL))
		}
	}
	d.staticLoops = looped
	return static, leftOut
}

// reportClashes logs and counts the clashes that were not there at the
// last call, one line per mechanism with the first few, and forgets the
// ones that ended.
func (d *Discovery) reportClashes(clashes []clash) {
	current := make(map[clash]bool, len(clashes))
	fresh := map[string][]clash{}
	for _, c := range clashes {
		current[c] = true
		if !d.clashed[c] {
			fresh[c.mechanism] = append(fresh[c.mechanism], c)
		}
	}
	d.clashed = current
	for _, m := range mechanisms {
		list := fresh[m.name]
		if len(list) == 0 {
			continue
		}
		d.clashes.Add(float64(len(list)))
		examples := make([]string, 0, maxExamples)
		for _, c := range list[:min(len(list), maxExamples)] {
			examples = append(examples, c.String())
		}
		level.Warn(d.logger).Log("msg", "Discovered backends left out: their name is taken", "mechanism", m.name,
			"count", len(list), "examples", strings.Join(examples, "; "))
	}
}
