package maintenance

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/maintenance/store"
)

// peersRefresh is how often a replica reads its peers' views, and checks
// whether its own changed.
const peersRefresh = time.Second

// viewRefresh is how often a replica publishes its view although it did
// not change: twice within the lease that keeps it, so that one lost
// refresh does not make the replica vanish for its peers.
const viewRefresh = store.ReplicaTTL / 2

// ReplicaStates are the states probegate_replicas counts.
var replicaStates = []string{"ready", "unready", "draining"}

// Registry is where replicas publish their views: the etcd store. It
// keeps each view as the bytes it was given, so that what a view holds is
// decided here, with the other wire types.
type Registry interface {
	// Publish stores the named replica's view until this replica stops
	// refreshing it.
	Publish(ctx context.Context, name string, view []byte) error
	// Withdraw removes the named replica's view.
	Withdraw(ctx context.Context, name string) error
	// Replicas returns the stored views, each with why it does not
	// count when the store can tell (no live lease, too large), and how
	// many more views there are than it read.
	Replicas(ctx context.Context) (views []store.StoredView, tooMany int, err error)
}

// Replicas publishes this replica's view under a lease, on every change
// and every few seconds, and follows the views of the live peers.
type Replicas struct {
	registry Registry
	self     func(ctx context.Context) ReplicaView
	logger   log.Logger
	now      func() time.Time
	gauge    *prometheus.GaugeVec
	ignored  *prometheus.CounterVec

	mu   sync.Mutex
	live []ReplicaView
	// stale are the views read live once and not since, each with when
	// it lapsed (lapsedViews).
	stale []ReplicaView
	fresh bool // the last read of the peers succeeded
	// readAt is when a read of the views last succeeded.
	readAt time.Time
	// noted maps each view ignored at the last read to why, so that
	// one is logged and counted once, not at every read; tooMany is the
	// number of views left out at the last read.
	noted   map[string]string
	tooMany int

	// onPeerListeners, when set, is given the peers' listeners whenever
	// they change (FollowPeerListeners); peerListeners are the last it
	// was given.
	selfName        string
	onPeerListeners func([]ReplicaListeners)
	peerListeners   []ReplicaListeners

	// readSoon asks Run to read the views before its next tick (ReadSoon).
	readSoon chan struct{}
}

// NewReplicas returns the replica views over registry; self describes this
// replica now. It registers probegate_replicas on reg.
func NewReplicas(registry Registry, self func(ctx context.Context) ReplicaView, reg prometheus.Registerer, logger log.Logger, now func() time.Time) *Replicas {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	r := &Replicas{registry: registry, self: self, logger: logger, now: now,
		gauge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "probegate_replicas",
			Help: "Live replicas sharing the maintenance store, this one included, by state (ready, unready, draining).",
		}, []string{"state"}),
		ignored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "probegate_replica_views_ignored_total",
			Help: "Stored replica views ignored, each counted once, by reason (no_lease, name_mismatch, too_large, too_many, malformed).",
		}, []string{"reason"}),
		noted: map[string]string{}, readSoon: make(chan struct{}, 1)}
	for _, s := range replicaStates {
		r.gauge.WithLabelValues(s)
	}
	for _, reason := range ignoredReasons {
		r.ignored.WithLabelValues(reason)
	}
	reg.MustRegister(r.gauge, r.ignored)
	return r
}

// ignoredReasons are the values of the label reason of
// probegate_replica_views_ignored_total.
var ignoredReasons = []string{store.IgnoredNoLease, store.IgnoredNameMismatch, store.IgnoredTooLarge, store.IgnoredTooMany, store.IgnoredMalformed}

// Live returns the views of the live replicas as last read, this one
// included, and the stale ones (lapsedViews), sorted by name: what
// /api/v1/replicas and /status list.
func (r *Replicas) Live() []ReplicaView {
	r.mu.Lock()
	defer r.mu.Unlock()
	listed := append(append(make([]ReplicaView, 0, len(r.live)+len(r.stale)), r.live...), r.stale...)
	slices.SortFunc(listed, func(a, b ReplicaView) int { return strings.Compare(a.Name, b.Name) })
	return listed
}

// Peers returns the live replicas other than this one as last read, and
// whether that read is current (false while the store is unreachable).
func (r *Replicas) Peers(self string) ([]ReplicaView, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	peers := make([]ReplicaView, 0, len(r.live))
	for _, v := range r.live {
		if v.Name != self {
			peers = append(peers, v)
		}
	}
	return peers, r.fresh
}

// FollowPeerListeners has f given the listeners of every live view but
// self's that says them (sorted by name) after every read of the store
// that changes them, the first read included. f runs on Run's goroutine,
// outside every lock of r. A stale view's listeners do not count: its
// staleness is this replica's memory (a replica that started after the
// peer left has none), while the lease is the store's, the same for
// every replica, so only live views make every replica take the same
// targets for loops. Call it before Run.
func (r *Replicas) FollowPeerListeners(self string, f func([]ReplicaListeners)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.selfName, r.onPeerListeners = self, f
}

// Run publishes and follows until ctx ends, then withdraws this replica's
// view so that its peers stop counting it at once.
func (r *Replicas) Run(ctx context.Context) {
	var last ReplicaView
	var published time.Time
	ticker := time.NewTicker(peersRefresh)
	defer ticker.Stop()
	for {
		v := r.self(ctx)
		if changed(last, v) || r.now().Sub(published) >= viewRefresh {
			v.Updated = r.now()
			if err := r.publish(ctx, v); err != nil {
				level.Debug(r.logger).Log("msg", "Cannot publish the replica view", "err", err)
			} else {
				last, published = v, v.Updated
			}
		}
		r.refresh(ctx)
		select {
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			r.registry.Withdraw(stop, v.Name)
			cancel()
			return
		case <-ticker.C:
		case <-r.readSoon:
		}
	}
}

// ReadSoon has Run read the views at once rather than at its next tick:
// for a caller that saw a sign that a view ended (shared probing sees a
// replica's verdicts deleted with its lease), so that the replica's share
// moves without waiting for the read. It never blocks.
func (r *Replicas) ReadSoon() {
	select {
	case r.readSoon <- struct{}{}:
	default:
	}
}

func (r *Replicas) publish(ctx context.Context, v ReplicaView) error {
	v.Listeners = v.Listeners.bounded()
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return r.registry.Publish(ctx, v.Name, data)
}

func (r *Replicas) refresh(ctx context.Context) {
	stored, tooMany, err := r.registry.Replicas(ctx)
	if follow := r.apply(stored, tooMany, err); follow != nil {
		follow()
	}
}

// apply takes in a read of the store. When the peers' listeners changed
// and someone follows them, it returns the call that hands them over, to
// be made once mu is released.
func (r *Replicas) apply(stored []store.StoredView, tooMany int, err error) (follow func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.fresh = false
		return nil
	}
	live, ignored := checkViews(stored)
	r.note(ignored, tooMany)
	r.stale = lapsedViews(r.live, r.stale, live, r.now())
	r.live, r.fresh, r.readAt = live, true, r.now()
	counts := map[string]int{}
	for _, v := range live {
		counts[stateOf(v)]++
	}
	for _, s := range replicaStates {
		r.gauge.WithLabelValues(s).Set(float64(counts[s]))
	}
	if r.onPeerListeners == nil {
		return nil
	}
	listeners := r.peerListenersLocked()
	if r.peerListeners != nil && reflect.DeepEqual(listeners, r.peerListeners) {
		return nil
	}
	r.peerListeners = listeners
	f := r.onPeerListeners
	return func() { f(listeners) }
}

// peerListenersLocked are the listeners of the live views but this
// replica's, sorted by name (checkViews sorts the live views), never nil.
// The caller holds mu.
func (r *Replicas) peerListenersLocked() []ReplicaListeners {
	listeners := make([]ReplicaListeners, 0, len(r.live))
	for _, v := range r.live {
		if v.Name != r.selfName && v.Listeners != nil {
			listeners = append(listeners, *v.Listeners)
		}
	}
	return listeners
}

// note logs and counts the views ignored at this read that were not
// ignored for the same reason at the last one, and the rise in the number
// of views left out (too_many) since the last read. The caller holds mu.
func (r *Replicas) note(ignored map[string]string, tooMany int) {
	for name, reason := range ignored {
		if r.noted[name] != reason {
			r.ignored.WithLabelValues(reason).Inc()
			level.Warn(r.logger).Log("msg", "Replica view ignored: it cannot speak for a live replica", "key_name", shortened(name), "reason", reason)
		}
	}
	r.noted = ignored
	// The views left out have no names here, so each rise in their
	// number counts as that many new ones; a number that holds or
	// falls counts nothing.
	if tooMany > r.tooMany {
		r.ignored.WithLabelValues(store.IgnoredTooMany).Add(float64(tooMany - r.tooMany))
		level.Warn(r.logger).Log("msg", "More replica views are stored than are read; the rest are ignored", "read", store.MaxViews, "ignored", tooMany)
	}
	r.tooMany = tooMany
}

// maxLoggedName bounds a key's name in the log: whoever can write the
// key chooses its length.
const maxLoggedName = 128

// shortened is name cut to maxLoggedName bytes, marked when cut.
func shortened(name string) string {
	if len(name) <= maxLoggedName {
		return name
	}
	return name[:maxLoggedName] + "…"
}

// checkViews keeps the stored views that speak for a live replica: the
// store found them under a live lease and small enough, they parse as a
// replica view, and the name in each is its key's. It returns them sorted
// by name, and why each other one was ignored, by its key's name. A view
// written by hand therefore counts for nothing: without a lease nothing
// says its replica is alive, whatever its updated time claims.
func checkViews(stored []store.StoredView) ([]ReplicaView, map[string]string) {
	views := make([]ReplicaView, 0, len(stored))
	ignored := map[string]string{}
	for _, sv := range stored {
		if sv.Ignored != "" {
			ignored[sv.Name] = sv.Ignored
			continue
		}
		var v ReplicaView
		err := json.Unmarshal(sv.Value, &v)
		// Whether a view is stale is this replica's to say.
		v.Stale, v.Lapsed = false, time.Time{}
		v.Listeners = v.Listeners.bounded()
		switch {
		case err != nil || v.Name == "":
			ignored[sv.Name] = store.IgnoredMalformed
		case v.Name != sv.Name:
			ignored[sv.Name] = store.IgnoredNameMismatch
		default:
			views = append(views, v)
		}
	}
	slices.SortFunc(views, func(a, b ReplicaView) int { return strings.Compare(a.Name, b.Name) })
	return views, ignored
}

// stateOf is the state probegate_replicas counts a view under.
func stateOf(v ReplicaView) string {
	switch {
	case v.Draining:
		return "draining"
	case v.Ready:
		return "ready"
	}
	return "unready"
}

// changed reports whether a view differs from the last published one in
// anything but its time.
func changed(last, v ReplicaView) bool {
	last.Updated, v.Updated = time.Time{}, time.Time{}
	return !reflect.DeepEqual(last, v)
}

// LiveNames returns the names of the replicas whose view was live at the
// last successful read of the store, this one's included when its own
// was, sorted, and when that read was (zero before the first): the
// members shared probing assigns the backends over.
func (r *Replicas) LiveNames() ([]string, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, len(r.live))
	for i, v := range r.live {
		names[i] = v.Name
	}
	return names, r.readAt
}
