package gate

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the Options left at zero.
const (
	DefaultCheckInterval   = time.Second
	DefaultShutdownTimeout = 30 * time.Second
	DefaultNamespace       = "probegate"
)

// Options configure a Gate. The zero value is usable: every field left at
// zero (or negative) takes its documented default.
type Options struct {
	// CheckInterval is how long one evaluation of the checks is reused by
	// /ready and by the metrics, so a balancer polling hard costs almost
	// nothing. Default DefaultCheckInterval.
	CheckInterval time.Duration
	// CheckTimeout bounds each check. Default CheckInterval, so one
	// evaluation never outlasts the period it is reused for.
	CheckTimeout time.Duration
	// Drain is how long the server keeps serving normally after the first
	// SIGTERM or SIGINT, with /ready failing, so that load balancers take it
	// out of rotation before it stops accepting connections. Default 0.
	Drain time.Duration
	// ShutdownTimeout bounds the graceful http.Server.Shutdown after the
	// window, and separately the cleanup callbacks. Default
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Namespace prefixes the metric names (<namespace>_gate_ready, ...).
	// Default DefaultNamespace.
	Namespace string
	// Logger receives the lifecycle events and check state changes. Default
	// a no-op logger.
	Logger log.Logger
	// Now is the clock that ages cached evaluations. Default time.Now.
	Now func() time.Time
	// Signals, when set, replaces SIGTERM and SIGINT as the source of drain
	// triggers: Run then installs no signal handler and restores none. It is
	// for tests and for programs that route signals themselves.
	Signals <-chan os.Signal
}

// Gate is a liveness and readiness gate with a drain lifecycle for an HTTP
// server. It is also a prometheus.Collector of its own state: register it
// with a prometheus.Registerer to export <namespace>_gate_ready,
// <namespace>_gate_draining and <namespace>_gate_check_success{check}.
type Gate struct {
	logger  log.Logger
	now     func() time.Time
	signals <-chan os.Signal

	// timings can change while the gate runs (a configuration reload), so
	// they are swapped as one value.
	timings atomic.Pointer[timings]

	// draining is the one flag that both fails /ready and switches
	// keep-alive off, so the two change in one step.
	draining atomic.Bool
	// latest is the newest finished evaluation, read without a lock on
	// the hot path of /ready.
	latest atomic.Pointer[evaluation]
	// generation counts registrations, so an evaluation made before a
	// check was added is never served as fresh.
	generation atomic.Uint64

	mu        sync.Mutex
	checks    []check
	inflight  *flight
	cleanups  []func(context.Context)
	lastPass  map[string]bool
	readyDesc *prometheus.Desc
	drainDesc *prometheus.Desc
	checkDesc *prometheus.Desc
}

// timings are the Options that may change while the gate runs.
type timings struct {
	checkInterval   time.Duration
	checkTimeout    time.Duration
	drain           time.Duration
	shutdownTimeout time.Duration
}

// timings applies the documented defaults to the timing fields.
func (o Options) timings() *timings {
	t := &timings{checkInterval: o.CheckInterval, checkTimeout: o.CheckTimeout, drain: max(0, o.Drain), shutdownTimeout: o.ShutdownTimeout}
	if t.checkInterval <= 0 {
		t.checkInterval = DefaultCheckInterval
	}
	if t.checkTimeout <= 0 {
		t.checkTimeout = t.checkInterval
	}
	if t.shutdownTimeout <= 0 {
		t.shutdownTimeout = DefaultShutdownTimeout
	}
	return t
}

// New returns a Gate with no checks registered, not draining.
func New(o Options) *Gate {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	g := &Gate{
		logger:   o.Logger,
		now:      o.Now,
		signals:  o.Signals,
		lastPass: map[string]bool{},
	}
	g.timings.Store(o.timings())
	g.initMetrics(o.Namespace)
	return g
}

// SetTimings applies new CheckInterval, CheckTimeout, Drain and
// ShutdownTimeout (the other fields of o are ignored), for a configuration
// reload. A drain window that has already begun keeps its length.
func (g *Gate) SetTimings(o Options) {
	g.timings.Store(o.timings())
}

// Draining reports whether the drain has begun.
func (g *Gate) Draining() bool { return g.draining.Load() }

// Ready reports what /ready answers now, without exclusions: not draining
// and every check passing (a warning passes). It shares the cached
// evaluation with /ready.
func (g *Gate) Ready(ctx context.Context) bool {
	ev, err := g.current(ctx)
	return err == nil && ev.pass && !g.draining.Load()
}
