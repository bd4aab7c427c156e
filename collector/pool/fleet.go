package pool

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/health"
)

// This file is shared probing's part of a backend: the replicas of a pool
// probe each backend from a few of them, its vantage points, and judge it
// by the verdicts they publish (collector/fleet has the rules, and
// collector/vantage runs them). The pool keeps, per backend, the role this
// replica plays for it and the fleet's verdict; the backend is then served
// by that verdict, under the overlays that stay each replica's own
// (maintenance, outlier and passive ejections).

// Role is what this replica does for one backend under shared probing.
type Role uint8

const (
	// RoleLocal: the replica probes the backend and judges it by its own
	// machine, as without shared probing. It is every backend's role when
	// shared probing is off or the replica has fallen back to local
	// probing, and that of a backend none of whose vantage points has a
	// live verdict: a backend is never out of service for lack of one.
	RoleLocal Role = iota
	// RoleVantage: the replica is one of the backend's vantage points. It
	// probes it, publishes its own machine's verdict, and serves it by the
	// fleet's verdict, its own among the others.
	RoleVantage
	// RoleWatcher: the replica does not probe the backend, and serves it
	// by the verdicts its vantage points publish.
	RoleWatcher
)

// Fleet is what shared probing tells a backend: this replica's role, the
// backend's vantage points, and the live verdicts of other replicas about
// it (of its vantage points, and of a replica that has just lost it while
// its view lives, which seeds a new vantage point). The slices are read
// during the call only.
type Fleet struct {
	Role          Role
	Self          string
	VantagePoints []string
	Peers         []fleet.Vantage
}

// fleetState is a backend's part of shared probing, nil while shared
// probing is off.
type fleetState struct {
	role          Role
	self          string
	vantagePoints []string
	peers         []fleet.Vantage
	// own is this replica's machine over its own probes while it is a
	// vantage point, without passive health (which is its own traffic's
	// and is never published), and ownSince when its state began.
	own      health.Health
	ownSince time.Time
	// verdict is the fleet's: the machine served, before this replica's
	// passive ejection, and judgement the last judgement with dissent.
	verdict   health.Health
	judgement fleet.Judgement
	dissent   fleet.Dissent
	// published is the own verdict last offered for publication, to tell
	// a change that must be published from one that need not.
	published fleet.Verdict
	offered   bool
	// scratch holds the verdicts of one judgement.
	scratch []fleet.Vantage
}

// shared reports whether the fleet's verdict serves the backend.
func (f *fleetState) shared() bool {
	return f != nil && f.role != RoleLocal
}

// machineLocked is the machine the backend is served by: the fleet's
// verdict under shared probing, with this replica's passive ejection over
// it, and the backend's own machine otherwise. The caller holds b.mu.
func (b *Backend) machineLocked() health.Health {
	if !b.fleet.shared() {
		return b.health
	}
	h := b.fleet.verdict
	if b.health.Ejected {
		h = h.Eject()
	}
	return h
}

// ProbedHere reports whether this replica probes the backend: it is not
// a backend whose vantage points probe it for this replica.
func (b *Backend) ProbedHere() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fleet == nil || b.fleet.role != RoleWatcher
}

// SetFleet hands the backend shared probing's word at now and judges it
// again. The vantage point named a lone dissenter by this
// judgement for the first time (fleet.Judgement.NewDissenter) is counted.
// SetFleet reports whether the replica's own verdict changed since it was
// last offered for publication (OwnVerdict; the observer is not told),
// and whether what the backend is served as changed: the caller, who
// judges many backends in a row, then calls Pool.NoteStateChanges once
// after them, rather than the pool counting itself once per backend.
func (b *Backend) SetFleet(f Fleet, now time.Time) (ownChanged, servedChanged bool) {
	var newDissenter string
	b.mu.Lock()
	// A passive ejection that probes here were to end can no longer be
	// ended so once the backend's vantage points probe it for this
	// replica: the readmission scan must look at it again.
	rescan := b.health.Ejected && f.Role == RoleWatcher && (b.fleet == nil || b.fleet.role != RoleWatcher)
	before := b.servedLocked()
	from := b.machineLocked().State
	if f.Role == RoleLocal {
		b.setLocalLocked(f)
	} else {
		newDissenter = b.setFleetLocked(f, now)
		ownChanged = b.ownChangedLocked()
	}
	after := b.servedLocked()
	to := b.machineLocked().State
	b.noteTransitionLocked(before, after, now)
	b.mu.Unlock()
	if to != from {
		b.logFleetTransition(from, to)
	}
	b.pool.noteFleet(b, newDissenter, false)
	if rescan && b.pool != nil && b.pool.readmitDue.Lower(now) {
		b.pool.wakeRun()
	}
	return ownChanged, after.State() != before.State()
}

// NoteStateChanges re-evaluates what depends on the whole pool's states
// (fail-open) after backends changed state by SetFleet.
func (p *Pool) NoteStateChanges() {
	p.noteFailOpen()
}

// setFleetLocked takes in f, whose role is not RoleLocal, and judges. The
// caller holds b.mu.
func (b *Backend) setFleetLocked(f Fleet, now time.Time) (newDissenter string) {
	if b.fleet == nil {
		b.fleet = &fleetState{}
	}
	s := b.fleet
	if f.Role == RoleVantage && s.role != RoleVantage {
		s.own, s.ownSince = b.ownStart(f.Peers, len(f.VantagePoints))
		// A vantage point again publishes again: what it published
		// before may have been deleted meanwhile.
		s.offered = false
	}
	s.role, s.self = f.Role, f.Self
	s.vantagePoints = append(s.vantagePoints[:0], f.VantagePoints...)
	s.peers = append(s.peers[:0], f.Peers...)
	return b.judgeFleetLocked(now)
}

// setLocalLocked has the backend judged by this replica's probes alone,
// under shared probing: in local mode, or for lack of a live verdict. The
// caller holds b.mu.
func (b *Backend) setLocalLocked(f Fleet) {
	if b.fleet.shared() {
		// Local judgement goes on from what was served: the backend's
		// machine becomes the fleet's verdict, so that falling back
		// changes nothing by itself.
		b.health = b.machineLocked()
	}
	if b.fleet == nil {
		b.fleet = &fleetState{}
	}
	s := b.fleet
	s.role, s.self = RoleLocal, f.Self
	s.vantagePoints = append(s.vantagePoints[:0], f.VantagePoints...)
	s.peers = append(s.peers[:0], f.Peers...)
	s.scratch = s.scratch[:0]
	s.judgement, s.dissent = fleet.Judgement{}, fleet.Dissent{}
	// Whatever it published as a vantage point is to be published again
	// when it is one again.
	s.offered = false
}

// ownStart is the machine this replica starts from when it becomes one of
// vantagePoints of the backend: the one seeded from the verdicts published
// about the backend, so that the verified latch survives a reassignment,
// unless this replica was probing the backend itself and knows at least
// as much: its own machine, when it holds the latch or nobody does. A
// replica that restarted probes locally first, with a machine that has
// not seen the probe path tell health apart yet, and must not unlatch a
// backend its peers had verified. A passive ejection is this replica's
// traffic's, never published: its own machine starts readmitted
// (health.Health.Readmit), as the probes alone would have it. The caller
// holds b.mu.
func (b *Backend) ownStart(peers []fleet.Vantage, vantagePoints int) (health.Health, time.Time) {
	seed, seedSince := fleet.Seed(peers, b.quorumLocked(vantagePoints), b.thresholds())
	if b.fleet.shared() || (seed.Verified && !b.health.Verified) {
		return seed, seedSince
	}
	own := b.health.Readmit()
	since := b.downtime.Since
	if since.IsZero() {
		since = b.clock()
	}
	return own, since
}

// judgeFleetLocked judges the backend by its vantage points' live
// verdicts, this replica's own among them when it is one, at now. The
// caller holds b.mu.
func (b *Backend) judgeFleetLocked(now time.Time) (newDissenter string) {
	s := b.fleet
	s.scratch = s.scratch[:0]
	for _, v := range s.peers {
		if slices.Contains(s.vantagePoints, v.Replica) && v.Replica != s.self {
			s.scratch = append(s.scratch, v)
		}
	}
	if s.role == RoleVantage {
		s.scratch = append(s.scratch, fleet.Vantage{Replica: s.self, Verdict: b.ownVerdictLocked()})
	}
	s.judgement, s.dissent = s.dissent.Step(s.vantagePoints, s.scratch, now, time.Duration(b.Probe.Interval))
	s.verdict, _ = fleet.Seed(s.scratch, b.quorumLocked(len(s.vantagePoints)), b.thresholds())
	if s.judgement.NewDissenter {
		return s.judgement.Dissenter
	}
	return ""
}

// quorumLocked is how many vantage points the fleet's verdict counts
// against, of vantagePoints: all of them to take the backend out, so that
// one vantage point alone never does while its partner has no judging
// verdict (it was just replaced, or has not probed yet); and, once the
// backend is out, only those that judge, so that it stays out while most
// of them say unhealthy rather than coming back because a new vantage
// point has not judged yet (fleet.Decide's rule is the first). The caller
// holds b.mu.
func (b *Backend) quorumLocked(vantagePoints int) int {
	if b.fleet.shared() && b.fleet.verdict.State == health.StateUnhealthy {
		return 0
	}
	return vantagePoints
}

// ownVerdictLocked is this replica's own verdict as a vantage point. The
// caller holds b.mu.
func (b *Backend) ownVerdictLocked() fleet.Verdict {
	var last *health.Result
	if b.probed {
		last = &b.last
	}
	return fleet.Of(b.fleet.own, last, b.fleet.ownSince)
}

// ownChangedLocked reports whether the own verdict differs, in anything
// but its since, from the one last offered for publication, and marks it
// offered. The caller holds b.mu.
func (b *Backend) ownChangedLocked() bool {
	s := b.fleet
	if s == nil || s.role != RoleVantage {
		return false
	}
	v := b.ownVerdictLocked()
	since := v.Since
	v.Since = s.published.Since
	if s.offered && v == s.published {
		return false
	}
	v.Since = since
	s.published, s.offered = v, true
	return true
}

// OwnVerdict is this replica's verdict about the backend, and false when
// it is not one of the backend's vantage points.
func (b *Backend) OwnVerdict() (fleet.Verdict, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fleet == nil || b.fleet.role != RoleVantage {
		return fleet.Verdict{}, false
	}
	return b.ownVerdictLocked(), true
}

// stepOwnLocked feeds a probe result to the own machine of a vantage
// point and judges the backend again; it does nothing in any other role.
// It reports whether the own verdict changed (ownChangedLocked). The
// caller holds b.mu.
func (b *Backend) stepOwnLocked(r health.Result, now time.Time) (newDissenter string, ownChanged bool) {
	s := b.fleet
	if s == nil || s.role != RoleVantage {
		return "", false
	}
	from := s.own.State
	s.own = s.own.Step(r, b.thresholds())
	if s.own.State != from {
		s.ownSince = now
	}
	return b.judgeFleetLocked(now), b.ownChangedLocked()
}

// afterMaintenanceLocked is maintenance's end for the own machine of a
// vantage point: what it publishes must earn readmission too, and is
// published at once, so that the replicas that do not probe the backend
// do not readmit it on the verdict from before. It reports whether the
// own verdict changed. The caller holds b.mu.
func (b *Backend) afterMaintenanceLocked(now time.Time) (ownChanged bool) {
	if s := b.fleet; s != nil && s.role == RoleVantage {
		s.own = s.own.AfterMaintenance()
		s.ownSince = now
		b.judgeFleetLocked(now)
		return b.ownChangedLocked()
	}
	return false
}

// logFleetTransition logs a change of the verdict a backend is served by.
func (b *Backend) logFleetTransition(from, to health.State) {
	keyvals := []any{"backend", b.Name, "url", b.URL, "from", from, "to", to, "verdict", "shared"}
	if to == health.StateUnhealthy {
		level.Warn(b.logger).Log(append([]any{"msg", "Backend taken out of service by its vantage points"}, keyvals...)...)
		return
	}
	level.Info(b.logger).Log(append([]any{"msg", "Backend state changed by its vantage points"}, keyvals...)...)
}

// FleetSnapshot is what a snapshot shows of shared probing for one
// backend.
type FleetSnapshot struct {
	// Shared says the fleet's verdict serves the backend; false when
	// this replica judges it by its own probes.
	Shared bool
	// VantagePoints are the backend's vantage points, highest ranked
	// first, each with its live verdict.
	VantagePoints []VantagePointSnapshot
}

// VantagePointSnapshot is one vantage point of a backend.
type VantagePointSnapshot struct {
	Replica string
	// Live says the vantage point has a live verdict: State and Since
	// are its.
	Live  bool
	State health.State
	Since time.Time
	// Failure is the reason of its last result when that failed,
	// health.ReasonNone otherwise.
	Failure health.Reason
	// Dissenting says it has disagreed alone with the verdict for longer
	// than fleet.DissentIntervals probe intervals.
	Dissenting bool
}

// fleetSnapshotLocked is the backend's FleetSnapshot, nil while shared
// probing is off. The caller holds b.mu.
func (b *Backend) fleetSnapshotLocked() *FleetSnapshot {
	s := b.fleet
	if s == nil {
		return nil
	}
	fs := &FleetSnapshot{Shared: s.shared(), VantagePoints: make([]VantagePointSnapshot, len(s.vantagePoints))}
	for i, replica := range s.vantagePoints {
		vp := VantagePointSnapshot{Replica: replica, Dissenting: replica == s.judgement.Dissenter}
		if j := slices.IndexFunc(s.scratch, func(v fleet.Vantage) bool { return v.Replica == replica }); j >= 0 {
			v := s.scratch[j].Verdict
			vp.Live, vp.State, vp.Since = true, v.State, v.Since
			if v.Probed && v.Class == health.ClassFailed {
				vp.Failure = v.Reason
			}
		}
		fs.VantagePoints[i] = vp
	}
	return fs
}

// SetFleetObserver has ownVerdictChanged called with the name of a
// backend this replica is a vantage point of whenever its own verdict
// about it changes and is to be published. It is called without any lock
// of the pool's held, and must not block. Call it before any backend is
// judged by the fleet.
func (p *Pool) SetFleetObserver(ownVerdictChanged func(backend string)) {
	p.fleetObserver.Store(&ownVerdictChanged)
}

// noteFleet counts the dissenter a judgement of b named and tells the
// observer of a change of the own verdict.
func (p *Pool) noteFleet(b *Backend, newDissenter string, ownChanged bool) {
	if p == nil {
		return
	}
	if newDissenter != "" {
		p.countDissent(newDissenter)
	}
	if !ownChanged {
		return
	}
	if o := p.fleetObserver.Load(); o != nil {
		(*o)(b.Name)
	}
}

// ByName is the named backend, nil when the pool has none.
func (p *Pool) ByName(name string) *Backend {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.byName[name]
}

// The modes of shared probing (Snapshot.Probing).
const (
	// ProbingShared: the replica probes its share of the backends and
	// serves every backend by its vantage points' verdicts.
	ProbingShared = "shared"
	// ProbingLocal: the replica probes every backend itself, having lost
	// the store or every peer.
	ProbingLocal = "local"
)

// fleetCounts are what the pool shows of shared probing as a whole.
type fleetCounts struct {
	mu       sync.Mutex
	mode     string
	dissents map[string]uint64
}

func (c *fleetCounts) snapshot() (string, map[string]uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mode, maps.Clone(c.dissents)
}

// SetProbing records shared probing's mode (ProbingShared or
// ProbingLocal), which snapshots show.
func (p *Pool) SetProbing(mode string) {
	p.fleetCounts.mu.Lock()
	defer p.fleetCounts.mu.Unlock()
	p.fleetCounts.mode = mode
}

// countDissent counts one more time that replica was named a lone
// dissenter (probegate_vantage_disagreements_total).
func (p *Pool) countDissent(replica string) {
	p.fleetCounts.mu.Lock()
	defer p.fleetCounts.mu.Unlock()
	if p.fleetCounts.dissents == nil {
		p.fleetCounts.dissents = map[string]uint64{}
	}
	p.fleetCounts.dissents[replica]++
}

// ForgetDissenters drops the counts of the dissenters for which gone
// reports true: replicas that left the fleet long ago, whose series would
// otherwise stay for the life of the process, one pair per pod name a
// rollout ever gave.
func (p *Pool) ForgetDissenters(gone func(replica string) bool) {
	p.fleetCounts.mu.Lock()
	defer p.fleetCounts.mu.Unlock()
	maps.DeleteFunc(p.fleetCounts.dissents, func(replica string, _ uint64) bool { return gone(replica) })
}
