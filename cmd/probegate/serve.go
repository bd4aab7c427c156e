package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	toolkitweb "github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/sync/singleflight"

	"github.com/probegate/probegate/cmd/probegate/internal/logging"
	"github.com/probegate/probegate/cmd/probegate/internal/reconcile"
	"github.com/probegate/probegate/cmd/probegate/internal/termsafe"
	"github.com/probegate/probegate/cmd/probegate/internal/web"
	"github.com/probegate/probegate/collector/agent"
	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/exporter"
	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/probe"
	"github.com/probegate/probegate/collector/readiness"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/gate"
	"github.com/probegate/probegate/internal/framing"
)

// serve runs probegate against the configured backends until a signal ends it.
func serve(opts *options, stderr io.Writer) int {
	logger, err := logging.New(opts.LogLevel, opts.LogFormat, stderr)
	if err != nil {
		termsafe.Fprintf(stderr, "probegate: %v\n", err)
		return 2
	}
	// The listeners open first: the configuration is judged with their
	// addresses, as check-config judges it with the flags' and a reload
	// with the same listeners'.
	listeners, err := opts.openListeners()
	if err != nil {
		level.Error(logger).Log("msg", "Cannot listen", "err", err)
		return 1
	}
	defer listeners.close()
	cfg, warnings, err := opts.judge(listenerAddrs(listeners.all()))
	if err != nil {
		level.Error(logger).Log("msg", "Invalid configuration", "err", err)
		return 1
	}
	logWarnings(logger, warnings)
	return runServer(opts, logger, cfg, listeners, opts.judge, nil)
}

// logWarnings logs what is valid in a configuration but most likely a
// mistake, one line each.
func logWarnings(logger log.Logger, warnings []config.Problem) {
	for _, w := range warnings {
		level.Warn(logger).Log("msg", "Configuration warning", "warning", w)
	}
}

// judgement judges a configuration for the listeners at the given
// addresses: options.judge, or for the demo its own configuration.
type judgement func(listen []net.Addr) (*config.Config, []config.Problem, error)

// server is one running probegate: the pool, its prober and fan-out, the
// metrics, and the loader a reload calls.
type server struct {
	opts   *options
	logger log.Logger
	// judge judges the configuration a reload reads, for listen, the
	// addresses of every listener of probegate's.
	judge   judgement
	listen  []net.Addr
	metrics *exporter.Metrics
	pool    *pool.Pool
	prober  *probe.Prober
	fanout  *fanout.Fanout
	gate    *gate.Gate
	// targets rebuilds the pool at each reload and discovery update, and
	// knows the configuration in force, which /api/v1/status/config shows.
	targets *reconcile.Reconciler
	// sd is service discovery, for its view.
	sd *discovery.Discovery
	// maint is maintenance, its store and the replica views, and the
	// readiness checks that read them.
	maint *readiness.Maintenance
	// mainSrv, healthSrv and adminSrv serve the listeners; the last two
	// are nil without their listener.
	mainSrv, healthSrv, adminSrv *http.Server
	// agent answers HAProxy's agent-check on the agent listener; nil
	// without it.
	agent *agent.Server
	// shared is probing.shared as the replica started with it.
	shared config.SharedProbing
	// reloads makes SIGHUP and POST /-/reload one reload at a time: a
	// request that arrives while one runs shares its result, so a storm of
	// reloads costs one. The reconciler orders them with discovery
	// updates.
	reloads singleflight.Group
}

// runServer wires everything and serves on listeners until the gate's
// lifecycle ends. cfg was judged for the listeners; reloads judge theirs
// with judge. announce, when set, is called once the listener is about
// to start. Each failure is logged once, here.
func runServer(opts *options, logger log.Logger, cfg *config.Config, listeners listenerSet, judge judgement, announce func()) int {
	level.Info(logger).Log("msg", "Starting probegate", "version", version.Info(), "backends", len(cfg.Backends))
	if err := opts.logAdminListener(logger, listeners.admin); err != nil {
		level.Error(logger).Log("msg", "Cannot start probegate", "err", err)
		return 1
	}
	s, err := newServer(opts, logger, cfg, listeners, judge)
	if err != nil {
		level.Error(logger).Log("msg", "Cannot start probegate", "err", err)
		return 1
	}
	if err := s.serve(listeners, announce); err != nil {
		level.Error(logger).Log("msg", "Server stopped", "err", err)
		return 1
	}
	level.Info(logger).Log("msg", "probegate stopped")
	return 0
}

// newServer builds every part of probegate for cfg and the listeners,
// and starts service discovery; nothing is served yet. Its error names
// the part that could not be built.
func newServer(opts *options, logger log.Logger, cfg *config.Config, listeners listenerSet, judge judgement) (*server, error) {
	started := time.Now()
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		versioncollector.NewCollector("probegate"),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	s := &server{opts: opts, logger: logger, judge: judge, listen: listenerAddrs(listeners.all()), metrics: exporter.NewMetrics(reg)}
	now := opts.clock()
	s.pool = pool.New(logger, now)
	if err := s.pool.Apply(discovery.Static(cfg), pool.SettingsOf(cfg)); err != nil {
		return nil, fmt.Errorf("build the backend pool: %w", err)
	}
	// A backend at a listener of this replica or of a peer is a loop:
	// the peers' listeners come with their views.
	self := selfPredicate(s.listen)
	fleet := fanout.NewFleet(self)
	var err error
	s.maint, err = readiness.Open(cfg.Maintenance, s.pool, readiness.Options{Replica: opts.replicaName(), Listeners: publishedListeners(self),
		StorageDir: opts.storageDir(), AdminAPI: opts.EnableAdminAPI, Registerer: reg, Logger: logger, Now: now})
	if err != nil {
		return nil, fmt.Errorf("read the maintenance state: %w", err)
	}
	s.prober = probe.NewProber(s.pool, logger, s.metrics.ObserveProbe)
	s.shared = cfg.Probing.Shared
	if err := opts.checkSharedProbing(cfg); err != nil {
		return nil, err
	}
	if s.shared.Enabled {
		s.shareProbing(reg, now)
	}
	stopDiscovery, err := s.startDiscovery(cfg, reg)
	if err != nil {
		return nil, fmt.Errorf("start service discovery: %w", err)
	}
	s.fanout = fanout.New(s.pool, cfg.Fanout, fanout.NewMetrics(reg), logger, now)
	s.fanout.SetReplicaName(opts.replicaName())
	applyMemoryLimit(logger, cfg.Fanout)
	s.metrics.ObserveReload(true, now())

	gateOptions := gateTimings(cfg.Gate)
	gateOptions.Logger = logger
	s.gate = gate.New(gateOptions)
	s.gate.OnShutdown(func(context.Context) { stopDiscovery() })
	s.maint.RegisterChecks(s.gate, func() bool { return s.targets.Running().Readiness.PeerRelative })
	s.maint.FollowPeerListeners(followPeers(fleet, s.targets.DetectLoops))
	reg.MustRegister(s.gate)

	rejected := web.NewRejectedCounter(reg)
	mux, err := s.mainMux(reg, rejected, started)
	if err != nil {
		return nil, err
	}
	adminMux, err := s.adminMux(cfg)
	if err != nil {
		return nil, err
	}
	if listeners.health != nil {
		s.healthSrv = opts.healthServer(s.gate.Wrap(s.gate.HealthHandler()), s.gate.Wrap(s.gate.ReadyHandler()))
	}
	if listeners.agent != nil {
		// Its series exist only while it is on.
		s.agent = agent.NewServer(s.pool.SnapshotOf, reg)
	}
	if listeners.admin != nil {
		s.adminSrv = opts.adminServer(s.gate.Wrap(web.LimitInFlight(adminMux, opts.MaxRequestsInFlight, web.PageWriteTimeout, rejected)))
	}
	// Discovered backends that lead back to probegate, this replica or a
	// peer, are dropped; an update discovery delivered before the rule was
	// set is applied again under it.
	s.targets.DetectLoops(fleet.Targets)
	readTimeout := time.Duration(opts.ReadTimeout)
	s.mainSrv = &http.Server{
		Handler:           framing.Handler(web.RouteFanout(http.NewCrossOriginProtection().Handler(s.fanout), web.LimitInFlight(mux, opts.MaxRequestsInFlight, web.PageWriteTimeout, rejected))),
		ConnContext:       framing.ConnContext,
		ReadHeaderTimeout: min(time.Duration(opts.ReadHeaderTimeout), readTimeout),
		ReadTimeout:       readTimeout,
		IdleTimeout:       readTimeout,
		MaxHeaderBytes:    serverMaxHeaderBytes(opts.MaxHeaderBytes),
	}
	return s, nil
}

// mainMux is the main listener's routes but the fan-out's.
func (s *server) mainMux(reg *prometheus.Registry, rejected *prometheus.CounterVec, started time.Time) (*http.ServeMux, error) {
	mux := http.NewServeMux()
	mux.Handle("/health", s.gate.HealthHandler())
	mux.Handle("/ready", s.gate.ReadyHandler())
	// The pool's series are built straight into metric families at scrape
	// time and merged with the registry's: at 10,000 backends the registry's
	// per-series checks would cost more than the whole budget.
	// Scrapes in flight together share one gathering and, when they ask
	// for the same encoding, one encoding; at most
	// --web.max-requests-in-flight are in flight, the excess refused as
	// the other heavy pages' (promhttp's own bound stays behind, on the
	// encodings).
	gatherer := exporter.SharedGatherer(exporter.NewGatherer(s.pool, reg))
	compressed, err := web.CompressScrapes(promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		Registry: reg, ErrorLog: logging.Printer(s.logger), MaxRequestsInFlight: s.opts.MaxRequestsInFlight, DisableCompression: true}))
	if err != nil {
		return nil, fmt.Errorf("build the metrics' compression: %w", err)
	}
	metrics := web.ShareScrapes(compressed)
	mux.Handle(s.opts.TelemetryPath, web.LimitMetrics(promhttp.InstrumentMetricHandler(reg, metrics), s.opts.MaxRequestsInFlight, web.PageWriteTimeout, rejected))
	mux.Handle("/healthz", exporter.HealthzHandlerWithStore(s.pool, s.fanout.LastRound, s.maint.HealthzStore()))
	s.mountIntrospection(mux, started)
	if err := s.mountLandingPage(mux); err != nil {
		return nil, fmt.Errorf("build the landing page: %w", err)
	}
	return mux, nil
}

// adminMux is the admin listener's routes: the admin interface is served
// there only.
func (s *server) adminMux(cfg *config.Config) (*http.ServeMux, error) {
	authenticated, err := webConfigAuthenticates(s.opts.WebConfigFile)
	if err != nil {
		return nil, fmt.Errorf("serve the admin API: %w", err)
	}
	// Every route passes the one guard of the admin listener.
	guard := s.opts.adminGuard()
	mux := http.NewServeMux()
	mux.Handle("/-/reload", guard.Lifecycle(http.NewCrossOriginProtection().Handler(http.HandlerFunc(s.handleReload))))
	s.maint.API(maintenance.APIOptions{Guard: guard, Authenticated: authenticated, MaxTTL: time.Duration(cfg.Maintenance.MaxTTL)}).Register(mux)
	mountDebugProbe(mux, guard, s.pool)
	return mux, nil
}

// serve runs the background work (the prober, the pool's timed work,
// maintenance) and serves on the listeners until the gate's lifecycle
// ends, then stops them in order.
func (s *server) serve(listeners listenerSet, announce func()) error {
	if s.healthSrv != nil {
		// Registered first, so it runs last: /ready keeps answering
		// "draining" on the health listener until everything else is done.
		s.gate.OnShutdown(func(ctx context.Context) { s.healthSrv.Shutdown(ctx) })
	}
	// The prober and the pool's timed work (readmissions, maintenance
	// expiry) run until shutdown.
	ctx, stopBackground := context.WithCancel(context.Background())
	var background sync.WaitGroup
	background.Go(func() { s.prober.Run(ctx) })
	background.Go(func() { s.pool.Run(ctx) })
	background.Go(func() { s.maint.Run(ctx) })
	s.gate.OnShutdown(func(context.Context) {
		stopBackground()
		background.Wait()
	})
	if s.agent != nil {
		// The agent speaks of the backends, not of this replica: HAProxy
		// keeps asking it through the drain window and the main
		// listener's shutdown, and it answers until just before the
		// prober stops (registered after it, so run before it), so that
		// no verdict it gives has stopped moving. A refused connection
		// afterwards is an agent failure, on which HAProxy changes
		// nothing.
		s.gate.OnShutdown(func(ctx context.Context) { s.agent.Shutdown(ctx) })
	}
	stopHUP := s.reloadOnSIGHUP()
	defer stopHUP()

	if announce != nil {
		announce()
	}
	flags, slogger := s.opts.webFlagConfig(), logging.Slog(s.logger)
	if s.adminSrv != nil {
		s.gate.OnShutdown(func(ctx context.Context) { s.adminSrv.Shutdown(ctx) })
	}
	return s.gate.Run(context.Background(), s.mainSrv, func() error {
		if s.healthSrv != nil {
			level.Info(s.logger).Log("msg", "Serving /health and /ready", "address", listeners.health.Addr())
			go s.healthSrv.Serve(listeners.health)
		}
		if s.agent != nil {
			level.Info(s.logger).Log("msg", "Serving the HAProxy agent protocol", "address", listeners.agent.Addr())
			go func() {
				if err := s.agent.Serve(listeners.agent); err != nil {
					level.Error(s.logger).Log("msg", "The agent listener stopped", "address", listeners.agent.Addr(), "err", err)
				}
			}()
		}
		return serveWithAdmin(s.logger, s.adminSrv, listeners.admin, func() error { return toolkitweb.ServeMultiple(listeners.main, s.mainSrv, flags, slogger) },
			func() error { return toolkitweb.Serve(listeners.admin, s.adminSrv, flags, slogger) })
	})
}

// builtinRoutes are the paths the main listener serves besides the
// telemetry path and the landing page; a path ending in "/" is a subtree.
// A route added to the mux belongs here: the telemetry path may take none
// of them, and the README's endpoint table is tested against this list.
func builtinRoutes() []string {
	return []string{"/health", "/ready", "/healthz", fanout.Path + "/", "/status", configPath, discoveryPath, discoveryPagePath}
}

// adminRoutes are the paths the admin listener serves, and the main
// listener answers 404; the README's admin table is tested against them.
func adminRoutes() []string {
	return []string{"/-/reload", maintenance.BackendsPath, maintenance.BackendsPath + "/", maintenance.ReplicasPath}
}

// gateTimings are the gate options the configuration sets.
func gateTimings(c config.Gate) gate.Options {
	return gate.Options{
		Drain:           time.Duration(c.Drain),
		ShutdownTimeout: time.Duration(c.ShutdownTimeout),
		CheckInterval:   time.Duration(c.CheckInterval),
	}
}

// reloadOnSIGHUP reloads the configuration on every SIGHUP until stopped.
func (s *server) reloadOnSIGHUP() (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-hup:
				s.reload()
			case <-done:
				return
			}
		}
	})
	return func() {
		signal.Stop(hup)
		close(done)
		wg.Wait()
	}
}

// handleReload is POST /-/reload, behind the admin listener's guard,
// which answers 403 without --web.enable-lifecycle. Other methods get
// 405.
func (s *server) handleReload(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "This endpoint requires a POST request.", http.StatusMethodNotAllowed)
		return
	}
	if err := s.reload(); err != nil {
		http.Error(w, fmt.Sprintf("reload failed, the running configuration is kept: %v", err), http.StatusInternalServerError)
		return
	}
	fmt.Fprintln(w, "ok")
}

// reload loads and applies the configuration. A configuration that does not
// load or apply leaves the running one untouched. Reloads asked for while
// one runs share its result.
func (s *server) reload() error {
	_, err, _ := s.reloads.Do("reload", func() (any, error) {
		err := s.apply()
		s.metrics.ObserveReload(err == nil, time.Now())
		if err != nil {
			level.Error(s.logger).Log("msg", "Reload failed; keeping the running configuration", "err", err)
			return nil, err
		}
		level.Info(s.logger).Log("msg", "Configuration reloaded", "backends", s.pool.Len())
		return nil, nil
	})
	return err
}

func (s *server) apply() error {
	cfg, warnings, err := s.judge(s.listen)
	if err != nil {
		return err
	}
	if err := s.maint.CheckReload(cfg.Maintenance); err != nil {
		return err
	}
	if cfg.Probing.Shared != s.shared {
		return fmt.Errorf("probing.shared changed from %+v to %+v: a restart applies it, since the replicas' assignment depends on it", s.shared, cfg.Probing.Shared)
	}
	logWarnings(s.logger, warnings)
	if err := s.targets.Apply(cfg); err != nil {
		return err
	}
	s.gate.SetTimings(gateTimings(cfg.Gate))
	s.fanout.Update(cfg.Fanout)
	applyMemoryLimit(s.logger, cfg.Fanout)
	return nil
}

// mountLandingPage serves the exporter-toolkit landing page at / when the
// telemetry path is not / itself.
func (s *server) mountLandingPage(mux *http.ServeMux) error {
	if s.opts.TelemetryPath == "/" {
		return nil
	}
	page, err := toolkitweb.NewLandingPage(toolkitweb.LandingConfig{
		Name:        "probegate",
		Description: "Health-checking fan-out gate for a pool of HTTP backends",
		Version:     version.Info(),
		// probegate serves no /debug/pprof: the page must not link it.
		Profiling: "false",
		Links: []toolkitweb.LandingLinks{
			{Address: s.opts.TelemetryPath, Text: "Metrics"},
			{Address: "/status", Text: "Status page"},
			{Address: "/healthz", Text: "Backends and pool (JSON)"},
			{Address: configPath, Text: "Running configuration (secrets hidden)"},
			{Address: discoveryPagePath, Text: "Service discovery: every target and what it became"},
			{Address: "/ready", Text: "Readiness"},
			{Address: "/health", Text: "Liveness"},
		},
	})
	if err != nil {
		return err
	}
	mux.Handle("/", page)
	return nil
}
