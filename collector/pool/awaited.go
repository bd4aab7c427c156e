package pool

import (
	"slices"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// A replica that has just started does not know its pool yet: its
// backends are unknown until their probes judge them, and the backends
// service discovery will add are not in it until discovery delivers.
// Routing serves unknown backends (an unprobed backend is in service),
// but a budget that counted them would spend disruptions it cannot see:
// a dead backend counted as available until its probes fail lets a
// maintenance request take the pool below its budget. A Kubernetes
// PodDisruptionBudget counts only pods whose readiness is known, and so
// does the judgement of a maintenance request here (AdmitMaintenance),
// which waits for what Awaited names.

// maxAwaitedNames bounds the backends an Awaited names: a pool of 10,000
// backends that has just started has 10,000 without a verdict, and an
// answer naming every one would be larger than the pool's own listing.
const maxAwaitedNames = 10

// Awaited is what a judgement of the readiness budget waits for before it
// can count every backend: backends without a first verdict, and
// discovery sources that have not delivered yet. It is plain data.
type Awaited struct {
	// Backends names the first backends (at most maxAwaitedNames, in
	// configuration order) that are probed and have no verdict yet;
	// Unjudged is how many there are in all.
	Backends []string
	Unjudged int
	// Interval is the longest probe interval among them: a verdict is
	// due within that many times the backend's failures after its first
	// probe.
	Interval time.Duration
	// Discovery names the discovery sources (configuration blocks, such
	// as dns_sd_configs[0]) that have not delivered their first targets.
	Discovery []string
}

// None reports whether nothing is awaited: every backend has a verdict
// and discovery has delivered.
func (a Awaited) None() bool { return a.Unjudged == 0 && len(a.Discovery) == 0 }

// note records a backend that awaits its verdict.
func (a *Awaited) note(b *Backend) {
	a.Unjudged++
	if len(a.Backends) < maxAwaitedNames {
		a.Backends = append(a.Backends, b.Name)
	}
	a.Interval = max(a.Interval, time.Duration(b.Probe.Interval))
}

// awaitsVerdict reports whether a backend served as s (bar maintenance)
// awaits its first verdict: it is probed and still unknown. A backend
// that is not probed never gets one, and counts as configured: in
// service, unless passive health holds it out.
func (b *Backend) awaitsVerdict(s health.Served) bool {
	return b.Probe.Enabled && s.State() == health.ServedUnknown
}

// AwaitDiscovery records the discovery sources whose first targets the
// pool is waiting for; nil or empty says that discovery has delivered
// (or that there is none). Until then the pool is partial: the readiness
// check fails and a maintenance request is not judged.
func (p *Pool) AwaitDiscovery(sources []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.discoveryAwaited = slices.Clone(sources)
}

// AwaitedDiscovery is the discovery sources the pool is waiting for, as
// AwaitDiscovery set them last.
func (p *Pool) AwaitedDiscovery() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Clone(p.discoveryAwaited)
}

// Awaited is what the pool's budget waits for now: every backend not in
// maintenance that awaits a verdict, and the discovery sources that have
// not delivered. It costs a pass over the backends.
func (p *Pool) Awaited() Awaited {
	p.catchUp(p.now())
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.awaitedLocked(p.inMaintenanceLocked)
}

// awaitedLocked is Awaited with the backends inMaintenance reports left
// out: their verdict changes nothing, as they are out either way. The
// caller holds mu.
func (p *Pool) awaitedLocked(inMaintenance func(*Backend) bool) Awaited {
	a := Awaited{Discovery: slices.Clone(p.discoveryAwaited)}
	for _, b := range p.backends {
		if !inMaintenance(b) && b.awaitsVerdict(b.servedBarMaintenance()) {
			a.note(b)
		}
	}
	return a
}
