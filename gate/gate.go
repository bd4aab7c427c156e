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
	checkInterval   time.Duration
	checkTimeout    time.Duration
	drain           time.Duration
	shutdownTimeout time.Duration
	logger          log.Logger
	now             func() time.Time
	signals         <-chan os.Signal

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

// New returns a Gate with no checks registered, not draining.
func New(o Options) *Gate {
	if o.CheckInterval <= 0 {
		o.CheckInterval = DefaultCheckInterval
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = o.CheckInterval
	}
	if o.Drain < 0 {
		o.Drain = 0
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = DefaultShutdownTimeout
	}
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
		checkInterval:   o.CheckInterval,
		checkTimeout:    o.CheckTimeout,
		drain:           o.Drain,
		shutdownTimeout: o.ShutdownTimeout,
		logger:          o.Logger,
		now:             o.Now,
		signals:         o.Signals,
		lastPass:        map[string]bool{},
	}
	g.initMetrics(o.Namespace)
	return g
}

// Draining reports whether the drain has begun.
func (g *Gate) Draining() bool { return g.draining.Load() }
