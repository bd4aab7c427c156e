package collector

import (
	"fmt"
	"strings"
	"sync"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/config"
)

// Pool is the set of configured backends in config order, with the
// selection, fail-open and readiness-budget rules over them.
type Pool struct {
	logger log.Logger

	mu             sync.RWMutex
	backends       []*Backend
	panicThreshold float64
	readiness      config.Readiness
}

// PoolSnapshot is a consistent view of the pool for /healthz and /metrics.
type PoolSnapshot struct {
	Backends  []BackendSnapshot
	InService int
	FailOpen  bool
	Budget    Budget
}

// NewPool builds a pool from a validated configuration.
func NewPool(cfg *config.Config, logger log.Logger) (*Pool, error) {
	p := &Pool{logger: logger}
	if err := p.Apply(cfg); err != nil {
		return nil, err
	}
	return p, nil
}

// Apply swaps in a new configuration. A backend whose name, url and probe
// settings are unchanged keeps its state (and its object, so in-flight
// probes still land); any other backend starts afresh. Nothing changes when
// an error is returned.
func (p *Pool) Apply(cfg *config.Config) error {
	p.mu.RLock()
	old := make(map[string]*Backend, len(p.backends))
	for _, b := range p.backends {
		old[b.Name] = b
	}
	p.mu.RUnlock()

	backends := make([]*Backend, 0, len(cfg.Backends))
	for _, bc := range cfg.Backends {
		b, err := p.buildBackend(cfg, bc, old[bc.Name])
		if err != nil {
			return fmt.Errorf("backend %q: %w", bc.Name, err)
		}
		backends = append(backends, b)
	}

	p.mu.Lock()
	p.backends = backends
	p.panicThreshold = cfg.Pool.PanicThreshold
	p.readiness = cfg.Readiness
	p.mu.Unlock()
	return nil
}

func (p *Pool) buildBackend(cfg *config.Config, bc config.Backend, previous *Backend) (*Backend, error) {
	clientConfig := cfg.ClientConfigFor(bc)
	b := &Backend{
		Name:         bc.Name,
		URL:          strings.TrimRight(bc.URL, "/"),
		Probe:        cfg.ProbeFor(bc),
		clientConfig: clientConfig,
		logger:       p.logger,
	}
	if previous != nil && previous.sameIdentity(b) {
		if previous.clientConfig.String() == clientConfig.String() {
			return previous, nil
		}
		previous.mu.Lock()
		b.inheritLocked(previous)
		previous.mu.Unlock()
	}
	client, err := NewHTTPClient(bc.Name, clientConfig)
	if err != nil {
		return nil, err
	}
	b.Client = client
	return b, nil
}

// inheritLocked copies the live state of a backend whose client settings
// changed but whose identity did not. The caller holds prev.mu.
func (b *Backend) inheritLocked(prev *Backend) {
	b.health, b.last, b.probed = prev.health, prev.last, prev.probed
	b.probes, b.failures, b.refusals = prev.probes, prev.failures, prev.refusals
	b.transitions, b.traffic = prev.transitions, prev.traffic
}

// Backends returns the backends in config order. The slice is the caller's.
func (p *Pool) Backends() []*Backend {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]*Backend(nil), p.backends...)
}

// Select returns the backends that should receive traffic, in config order.
// When the in-service share falls below the panic threshold, or nothing is
// in service, it fails open and returns every backend.
func (p *Pool) Select() (selected []*Backend, failOpen bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	selected = make([]*Backend, 0, len(p.backends))
	for _, b := range p.backends {
		if b.Health().InService() {
			selected = append(selected, b)
		}
	}
	if failsOpen(len(selected), len(p.backends), p.panicThreshold) {
		return append(selected[:0], p.backends...), true
	}
	return selected, false
}

// failsOpen is the fail-open rule: nothing in service, or an in-service
// share (in percent) below the panic threshold.
func failsOpen(inService, configured int, panicThreshold float64) bool {
	if configured == 0 {
		return false
	}
	return inService == 0 || float64(inService)*100 < panicThreshold*float64(configured)
}

// Budget is the readiness budget of the pool now.
func (p *Pool) Budget() Budget {
	p.mu.RLock()
	defer p.mu.RUnlock()
	inService := 0
	for _, b := range p.backends {
		if b.Health().InService() {
			inService++
		}
	}
	return ComputeBudget(p.readiness, len(p.backends), inService)
}

// Snapshot copies every backend and the pool-wide numbers at one moment.
func (p *Pool) Snapshot() PoolSnapshot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s := PoolSnapshot{Backends: make([]BackendSnapshot, len(p.backends))}
	for i, b := range p.backends {
		s.Backends[i] = b.Snapshot()
		if s.Backends[i].Health.InService() {
			s.InService++
		}
	}
	s.FailOpen = failsOpen(s.InService, len(p.backends), p.panicThreshold)
	s.Budget = ComputeBudget(p.readiness, len(p.backends), s.InService)
	return s
}
