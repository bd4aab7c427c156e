package maintenance

import (
	"time"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/entries"
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
	BudgetHolds        bool      `json:"budget_holds"`
	Draining           bool      `json:"draining"`
	Expected           int       `json:"expected"`
	InService          int       `json:"in_service"`
	DisruptionsAllowed int       `json:"disruptions_allowed"`
	Updated            time.Time `json:"updated"`
}

// ReplicaList is the answer of GET /api/v1/replicas.
type ReplicaList struct {
	Replicas []ReplicaView `json:"replicas"`
}
