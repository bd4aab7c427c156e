package vantage

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
)

// tick is how often the coordinator looks at the views and publishes
// what changed: as often as a replica may write (fleet.MaxWritesPerSecond).
const tick = time.Second / fleet.MaxWritesPerSecond

// unsyncedLimit is how long the store may be out of reach before the
// replica falls back to local probing. It is counted from the last
// successful read of the views, which are read every second, so the
// store's loss is up to a second older than that read, and the mode is
// decided every tick: two seconds short of the view lease, the fall-back
// comes within the view lease of the loss. By then a peer's verdict may
// have ended unseen, and this replica's own may have lapsed.
const unsyncedLimit = store.ReplicaTTL - 2*time.Second

// forgetAfter is how long a replica that left the fleet is remembered as
// a dissenter: long enough for the alerts on it to resolve by the rules'
// own reading, short enough that the replicas a rollout replaced do not
// keep their series for the life of the process.
const forgetAfter = 15 * time.Minute

// rejudge is how often every backend is judged again although nothing
// arrived: the views change without a word to the coordinator, and a
// dissent is named only once it has lasted (fleet.DissentIntervals).
const rejudge = time.Second

// Options are what a Coordinator needs.
type Options struct {
	Pool *pool.Pool
	// Self is this replica's name, the one its view is published under.
	Self string
	// VantagePoints is probing.shared.vantage_points.
	VantagePoints int
	Store         store.Verdicts
	// Members returns the names of the replicas whose view was live at
	// the last successful read of the store, this one's included when its
	// own is, and when that read was (zero before the first).
	Members func() (names []string, readAt time.Time)
	// ReadMembersSoon, when set, has the views read at once: a replica's
	// verdicts all deleted together is the sign of its lease ending, and
	// its share moves as soon as its view is seen gone.
	ReadMembersSoon func()
	// Resync has the prober take in which backends it probes.
	Resync     func()
	Registerer prometheus.Registerer
	Logger     log.Logger
	Now        func() time.Time
}

// Coordinator runs shared probing on one replica (see the package doc).
type Coordinator struct {
	o       Options
	metrics *metrics
	// arrived tells Run that verdicts arrived. It holds one signal.
	arrived chan struct{}

	// mu guards what the watch and the prober hand over.
	mu        sync.Mutex
	published published
	// dirty are the backends whose published verdicts changed since
	// they were last judged.
	dirty   map[string]struct{}
	watchOK bool
	// watchLost is when the watch last failed after working.
	watchLost time.Time
	// pending are the backends whose own verdict is to be published.
	pending map[string]struct{}

	// state guards the rest, which the judging and the publisher share.
	// It is never held during a call to the store, which may take its
	// request timeout: the mode must fall back on time however long a
	// write waits.
	state sync.Mutex
	mode  string
	// lastSynced is when the views and the watch were last both current:
	// the last successful read of the views, unless the watch has failed
	// since.
	lastSynced  time.Time
	memberNames []string
	members     fleet.Members
	roles       map[string]assignment
	// written are the backends whose verdict this replica has put under
	// its lease, lease; drops, those of them to delete, and when: a
	// vantage point that lost a backend keeps its verdict up for one view
	// lease, so that the one gaining it is seeded from it.
	written   map[string]bool
	drops     map[string]time.Time
	lease     int64
	lastWrite time.Time
	lastBytes int
	lastFull  time.Time
	// lastMember is when each replica was last seen live.
	lastMember map[string]time.Time
	// servedChanged says that a backend judged since the pool last heard
	// of it changed what it is served as.
	servedChanged bool
	// scratch space of one judgement.
	vantagePoints []string
	peers         []fleet.Vantage
}

// New returns a coordinator; Run starts it.
func New(o Options) *Coordinator {
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Coordinator{o: o, metrics: newMetrics(o.Registerer), arrived: make(chan struct{}, 1),
		published: newPublished(), dirty: map[string]struct{}{}, pending: map[string]struct{}{},
		roles: map[string]assignment{}, written: map[string]bool{}, drops: map[string]time.Time{}, lastMember: map[string]time.Time{}}
}

// Run shares the probing until ctx ends. It starts in local mode: until
// the store has been read, this replica knows no verdict but its own.
func (c *Coordinator) Run(ctx context.Context) {
	c.attach()
	var background sync.WaitGroup
	background.Go(func() { c.o.Store.WatchVerdicts(ctx, c.onUpdate) })
	background.Go(func() { c.publishEvery(ctx) })
	defer background.Wait()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		c.judgeAt(c.o.Now())
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-c.arrived:
		}
	}
}

// publishEvery publishes what is due each tick until ctx ends.
func (c *Coordinator) publishEvery(ctx context.Context) {
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			c.publish(ctx, c.o.Now())
		}
	}
}

// attach has the pool tell the coordinator of changes of the own
// verdicts.
func (c *Coordinator) attach() {
	c.o.Pool.SetFleetObserver(c.ownVerdictChanged)
}

// ownVerdictChanged queues the backend's own verdict for publication.
func (c *Coordinator) ownVerdictChanged(backend string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[backend] = struct{}{}
}

// onUpdate takes in one update of the store's watch.
func (c *Coordinator) onUpdate(u store.VerdictUpdate) {
	c.mu.Lock()
	if u.Err != nil {
		if c.watchOK {
			c.watchLost = c.o.Now()
		}
		c.watchOK = false
		c.mu.Unlock()
		level.Debug(c.o.Logger).Log("msg", "Cannot follow the published verdicts", "err", u.Err)
		return
	}
	c.watchOK = true
	dropped, emptied := c.published.apply(u, c.dirty)
	c.mu.Unlock()
	c.metrics.malformed.Add(float64(dropped))
	if emptied && c.o.ReadMembersSoon != nil {
		c.o.ReadMembersSoon()
	}
	select {
	case c.arrived <- struct{}{}:
	default:
	}
}

// step does what is due at now, the judgement and then the publication,
// in one call: Run does the two on goroutines of their own.
func (c *Coordinator) step(ctx context.Context, now time.Time) {
	c.judgeAt(now)
	c.publish(ctx, now)
}

// judgeAt decides the mode at now and judges the backends due.
func (c *Coordinator) judgeAt(now time.Time) {
	names, readAt := c.o.Members()
	c.state.Lock()
	defer c.state.Unlock()
	c.mu.Lock()
	watchOK, watchLost := c.watchOK, c.watchLost
	c.mu.Unlock()
	switch {
	case watchOK:
		c.lastSynced = readAt
	case readAt.After(watchLost):
		c.lastSynced = watchLost
	default:
		c.lastSynced = readAt
	}
	c.forgetLeavers(names, now)
	membersChanged := !slices.Equal(names, c.memberNames)
	if membersChanged {
		c.memberNames = slices.Clone(names)
		c.members = fleet.NewMembers(names)
	}
	mode, why := c.modeAt(now)
	modeChanged := mode != c.mode
	if modeChanged {
		c.setMode(mode, why)
	}
	if modeChanged || membersChanged || now.Sub(c.lastFull) >= rejudge {
		c.judgeAll(now)
	} else {
		c.judgeDirty(now)
	}
	if c.servedChanged {
		c.servedChanged = false
		c.o.Pool.NoteStateChanges()
	}
}

// forgetLeavers has the pool forget the dissents of the replicas not
// live for forgetAfter.
func (c *Coordinator) forgetLeavers(live []string, now time.Time) {
	for _, name := range live {
		c.lastMember[name] = now
	}
	gone := func(replica string) bool {
		seen, ok := c.lastMember[replica]
		return !ok || now.Sub(seen) > forgetAfter
	}
	c.o.Pool.ForgetDissenters(gone)
	maps.DeleteFunc(c.lastMember, func(_ string, seen time.Time) bool { return now.Sub(seen) > forgetAfter })
}

// modeAt is the mode at now, and why it is local: the store has been out
// of reach for longer than the view lease (a peer's verdicts may have
// ended unseen, and this replica's own may have lapsed), or no peer is
// live (nobody else probes anything).
func (c *Coordinator) modeAt(now time.Time) (mode, why string) {
	switch {
	case c.lastSynced.IsZero():
		return pool.ProbingLocal, "the store has not been read yet"
	case now.Sub(c.lastSynced) > unsyncedLimit:
		return pool.ProbingLocal, "the store has been out of reach for about a view lease"
	case !c.members.Has(c.o.Self):
		return pool.ProbingLocal, "this replica's own view is not live in the store"
	case c.members.Len() < 2:
		return pool.ProbingLocal, "no peer is live"
	}
	return pool.ProbingShared, ""
}

func (c *Coordinator) setMode(mode, why string) {
	if c.mode != "" || mode != pool.ProbingLocal {
		if mode == pool.ProbingLocal {
			level.Warn(c.o.Logger).Log("msg", "Shared probing: probing every backend here", "why", why)
		} else {
			level.Info(c.o.Logger).Log("msg", "Shared probing: probing this replica's share", "replicas", c.members.Len(), "vantage_points", c.members.VantagePoints(c.o.VantagePoints))
		}
	}
	if mode == pool.ProbingLocal {
		// Verdicts this replica no longer keeps up must not outlive the
		// mode: a replica joining would be seeded from them. Where the
		// store cannot be reached they end with the lease instead.
		for backend := range c.written {
			c.drops[backend] = time.Time{}
		}
	}
	c.mode = mode
	c.o.Pool.SetProbing(mode)
	c.metrics.setMode(mode)
}

// judgeAll judges every backend of the pool, and forgets those gone.
func (c *Coordinator) judgeAll(now time.Time) {
	c.lastFull = now
	c.mu.Lock()
	clear(c.dirty)
	c.mu.Unlock()
	backends := c.o.Pool.Backends()
	resync, assigned := false, 0
	present := make(map[string]struct{}, len(backends))
	for _, b := range backends {
		present[b.Name] = struct{}{}
		if c.judge(b, now) {
			resync = true
		}
		if c.roles[b.Name].role != pool.RoleWatcher {
			assigned++
		}
	}
	for name := range c.roles {
		if _, ok := present[name]; !ok {
			delete(c.roles, name)
			c.dropLater(name, now)
		}
	}
	c.metrics.assigned.Set(float64(assigned))
	if resync {
		c.o.Resync()
	}
}

// judgeDirty judges the backends whose published verdicts changed.
func (c *Coordinator) judgeDirty(now time.Time) {
	c.mu.Lock()
	if len(c.dirty) == 0 {
		c.mu.Unlock()
		return
	}
	names := make([]string, 0, len(c.dirty))
	for name := range c.dirty {
		names = append(names, name)
	}
	clear(c.dirty)
	c.mu.Unlock()
	resync := false
	for _, name := range names {
		if b := c.o.Pool.ByName(name); b != nil && c.judge(b, now) {
			resync = true
		}
	}
	if resync {
		c.o.Resync()
	}
}

// judge hands one backend its role and its vantage points' verdicts, and
// reports whether whether this replica probes it changed.
func (c *Coordinator) judge(b *pool.Backend, now time.Time) (probingChanged bool) {
	f := pool.Fleet{Role: pool.RoleLocal}
	if c.mode == pool.ProbingShared && b.Probe.Enabled {
		c.vantagePoints = c.members.Assign(c.vantagePoints[:0], b.Name, c.o.VantagePoints)
		c.mu.Lock()
		c.peers = c.published.live(c.peers[:0], b.Name, c.o.Self, c.members)
		c.mu.Unlock()
		f = pool.Fleet{Role: c.roleOf(), Self: c.o.Self, VantagePoints: c.vantagePoints, Peers: c.peers}
	}
	ownChanged, servedChanged := b.SetFleet(f, now)
	if ownChanged {
		c.ownVerdictChanged(b.Name)
	}
	c.servedChanged = c.servedChanged || servedChanged
	previous, known := c.roles[b.Name]
	c.roles[b.Name] = assignment{backend: b, role: f.Role}
	switch {
	case f.Role == pool.RoleVantage:
		delete(c.drops, b.Name)
	case c.written[b.Name]:
		c.dropLater(b.Name, now)
	}
	// A reload may have replaced the backend's object, which the prober
	// then took in as probed here: it must sync to the role again.
	return !known || previous.backend != b || (previous.role == pool.RoleWatcher) != (f.Role == pool.RoleWatcher)
}

// assignment is this replica's role for one backend, and the backend
// object it was given to.
type assignment struct {
	backend *pool.Backend
	role    pool.Role
}

// roleOf is this replica's role for the backend whose vantage points and
// live peers' verdicts are in the scratch space: a vantage point, or a
// watcher of vantage points of which one has a live verdict, or else the
// backend is probed here, for lack of any verdict.
func (c *Coordinator) roleOf() pool.Role {
	if slices.Contains(c.vantagePoints, c.o.Self) {
		return pool.RoleVantage
	}
	for _, v := range c.peers {
		if slices.Contains(c.vantagePoints, v.Replica) {
			return pool.RoleWatcher
		}
	}
	return pool.RoleLocal
}

// dropLater schedules the deletion of this replica's verdict about the
// backend one view lease from now, unless one is scheduled already.
func (c *Coordinator) dropLater(backend string, now time.Time) {
	if !c.written[backend] {
		return
	}
	if _, ok := c.drops[backend]; !ok {
		c.drops[backend] = now.Add(store.ReplicaTTL)
	}
}
