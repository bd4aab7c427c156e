package maintenance

import (
	"time"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/pool"
)

// The wire types of the admin API: the server encodes them and
// `probegate maintenance` decodes them, so each is declared once, here.

// BackendView is one backend of GET /api/v1/backends.
type BackendView struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	// Group is the backend's replica group, its own name when it was
	// given none.
	Group       string         `json:"group"`
	State       string         `json:"state"`
	InService   bool           `json:"in_service"`
	Maintenance *entries.Entry `json:"maintenance"`
	// Verdict says whether the backend is served by its vantage points'
	// verdicts (shared) or by this replica's own probes (local), and
	// VantagePoints are those replicas, highest ranked first; both are
	// absent while shared probing does not judge the backend.
	Verdict       string                  `json:"verdict,omitempty"`
	VantagePoints []pool.VantagePointView `json:"vantage_points,omitzero"`
}

// List is the answer of GET /api/v1/backends.
type List struct {
	Backends []BackendView `json:"backends"`
	// Absent are the maintenance entries of backends the pool does not
	// have now (removed by a reload or discovery); they apply again when
	// the backend returns, unless they expire first.
	Absent    []entries.Entry `json:"absent_maintenance"`
	Readiness budget.Budget   `json:"readiness"`
	// Store says where the entries come from and whether they are
	// current.
	Store StoreStatus `json:"store"`
}

// StoreStatus is the health of the store the entries are kept in.
type StoreStatus struct {
	// Kind is file or etcd.
	Kind string `json:"kind"`
	// Healthy is false while the store cannot be reached: reads then
	// answer from the last known state, and writes are refused. It is
	// false too while the state in force is not the store's own (the
	// state saved by an earlier run) or cannot be kept.
	Healthy bool `json:"healthy"`
	// Stale is set while the entries in force may not be the store's
	// current ones: the store cannot be reached, or has not answered
	// since this replica started from its saved state.
	Stale bool `json:"stale"`
	// Synced is false until some state is in force: read from the
	// store, or saved by an earlier run. A replica sharing a store is
	// not ready until then.
	Synced bool `json:"synced"`
	// LastSync is when this replica last read or wrote the store, zero
	// before the first time.
	LastSync time.Time `json:"last_sync,omitzero"`
	// Error is the store's last error while it is unhealthy.
	Error string `json:"error,omitempty"`
}

// Request is the body of POST /api/v1/backends/<name>/maintenance.
type Request struct {
	Reason string `json:"reason"`
	// TTL ends the maintenance by itself after this long, in Prometheus
	// duration syntax (2h, 30m, 1d); empty for none.
	TTL string `json:"ttl,omitempty"`
}

// Entered is the answer to a maintenance request that was granted.
type Entered struct {
	Backend     string        `json:"backend"`
	State       string        `json:"state"`
	Forced      bool          `json:"forced"`
	Maintenance entries.Entry `json:"maintenance"`
	Readiness   budget.Budget `json:"readiness"`
}

// Refused is the 429 answer: the budget's numbers.
type Refused struct {
	Error string `json:"error"`
	budget.Budget
	// Group is the budget of the backend's replica group when it is the
	// one that refused (readiness.per_group), its Expected the group's
	// replicas.
	Group *budget.Group `json:"group,omitempty"`
}

// NotYetProbed is the 503 answer to a maintenance request that the
// readiness budget cannot judge yet, and what it waits for.
type NotYetProbed struct {
	Error    string   `json:"error"`
	Awaiting Awaiting `json:"awaiting"`
}

// Awaiting is what a replica's readiness budget waits for before it
// counts every backend.
type Awaiting struct {
	// Backends names the first backends (ten at most) whose probes have
	// not given a verdict yet; Unjudged counts them all.
	Backends []string `json:"backends"`
	Unjudged int      `json:"unjudged_backends"`
	// Discovery names the discovery blocks that have not delivered their
	// first targets, such as dns_sd_configs[0].
	Discovery []string `json:"discovery"`
}

// Ended is the answer to DELETE /api/v1/backends/<name>/maintenance.
type Ended struct {
	Backend string `json:"backend"`
	// WasInMaintenance is false when there was nothing to end.
	WasInMaintenance bool `json:"was_in_maintenance"`
	// State is the backend's state now, empty when the pool does not have
	// it.
	State string `json:"state,omitempty"`
	// Saved is false when the end is in force here but the store has not
	// recorded it yet; it is retried until it has.
	Saved bool `json:"saved"`
}

// ReplicaView is what one replica publishes about itself for its peers
// and for GET /api/v1/replicas.
type ReplicaView struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Ready is what the replica's /ready answers.
	Ready bool `json:"ready"`
	// BudgetHolds is the replica's own readiness budget, before any peer
	// override.
	BudgetHolds bool `json:"budget_holds"`
	// GroupsHold is whether every replica group's budget
	// (readiness.per_group) holds for the replica, before any peer
	// override; true while per_group is unset. A view without it, from a
	// replica older than the field, reads as false: it never turns a
	// peer-relative peer unready on the word of a replica that did not
	// judge its groups.
	GroupsHold         bool      `json:"groups_hold"`
	Draining           bool      `json:"draining"`
	Expected           int       `json:"expected"`
	InService          int       `json:"in_service"`
	DisruptionsAllowed int       `json:"disruptions_allowed"`
	Updated            time.Time `json:"updated"`
	// Listeners say where the replica listens, so that its peers take a
	// backend there for a loop as it does itself; nil from a replica
	// that does not say. A pointer keeps views comparable.
	Listeners *ReplicaListeners `json:"listeners,omitempty"`
	// Stale is set on a view this replica read live once and no longer
	// finds live: its lease lapsed (its replica stopped, hung or lost the
	// store) or it was withdrawn. A stale view is never ready, and stays
	// listed for a while (Replicas.Live) so that an operator sees that a
	// replica went away, and when. It is this replica's observation: a
	// view read from the store is live whatever it says.
	Stale bool `json:"stale"`
	// Lapsed is when this replica found a stale view gone, on its own
	// clock; zero for a live view.
	Lapsed time.Time `json:"lapsed,omitzero"`
}

// ReplicaListeners are where a replica listens, as its own loop check
// sees it: a backend URL at one of them leads back to the replica. Each
// list is bounded (bounded), so that a view stays far below the store's
// limit of a view's size whatever the host.
type ReplicaListeners struct {
	// Addresses are the listeners as bound, host:port: main, health and
	// admin.
	Addresses []string `json:"addresses,omitempty"`
	// HostAddresses are the host's addresses, on which a listener bound
	// to an unspecified address (0.0.0.0, [::]) accepts too.
	HostAddresses []string `json:"host_addresses,omitempty"`
	// HostNames are the names of the host, localhost among them.
	HostNames []string `json:"host_names,omitempty"`
}

// ReplicaList is the answer of GET /api/v1/replicas.
type ReplicaList struct {
	Replicas []ReplicaView `json:"replicas"`
}
