package fanout

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/probegate/probegate/collector/fanout/internal/hedge"
	"github.com/probegate/probegate/collector/fanout/internal/replica"
)

// This file is what the fan-out remembers of its replica groups between
// rounds: each replica's requests in flight and recent latency, which
// choose the replica a round asks, and with automatic hedging each
// group's recent answers, which say when a round hedges. A group of one
// backend has nothing to choose or hedge, so it keeps nothing here.

// replicaStates is the lasting state of the pool's replica groups, keyed
// by group and by backend name. Update starts it afresh, since the hedge
// settings decide whether a group keeps a window; it is kept within a
// few times the pool's size by starting afresh whenever it grows past
// that (backends that left the pool for good).
type replicaStates struct {
	mu       sync.Mutex
	groups   map[string]*groupState
	replicas map[string]*replicaState
	// windows says whether groups keep their recent answers: only for
	// automatic hedging.
	windows bool
}

// groupState is what the fan-out remembers of one replica group.
type groupState struct {
	mu sync.Mutex
	// window is the group's recent answers, nil unless hedging is
	// automatic.
	window *hedge.Window
}

// replicaState is what the fan-out remembers of one replica.
type replicaState struct {
	inFlight atomic.Int64
	mu       sync.Mutex
	latency  replica.Latency
}

func newReplicaStates(windows bool) *replicaStates {
	return &replicaStates{groups: map[string]*groupState{}, replicas: map[string]*replicaState{}, windows: windows}
}

// group is the state of the group named name, whose replicas are
// replicas, and the state of each replica, in their order. poolSize is
// the pool's size now, which bounds what is kept.
func (s *replicaStates) group(name string, replicas []string, poolSize int) (*groupState, []*replicaState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.replicas)+len(replicas) > 2*poolSize+64 {
		clear(s.groups)
		clear(s.replicas)
	}
	g := s.groups[name]
	if g == nil {
		g = &groupState{}
		if s.windows {
			g.window = &hedge.Window{}
		}
		s.groups[name] = g
	}
	states := make([]*replicaState, len(replicas))
	for i, r := range replicas {
		states[i] = s.replicas[r]
		if states[i] == nil {
			states[i] = &replicaState{}
			s.replicas[r] = states[i]
		}
	}
	return g, states
}

// delayFor is how long after asking the group's chosen replica a round
// hedges, by d; ok is false when no hedge can come before the round ends.
func (g *groupState) delayFor(d hedge.Delay) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return d.For(g.window)
}

// record remembers an answer of the group that took took, or a request
// cancelled after took (a lower bound of what it would have taken).
func (g *groupState) record(took time.Duration) {
	if g.window == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.window.Record(took)
}

// observe records the replica's answer that came at now and took took.
func (r *replicaState) observe(now time.Time, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latency.Observe(now, took)
}

// choice is what replica.Choose reads of the replica now.
func (r *replicaState) choice() replica.Replica {
	r.mu.Lock()
	defer r.mu.Unlock()
	return replica.Replica{InFlight: int(r.inFlight.Load()), Latency: r.latency.Value()}
}
