// Package maintenance is everything about taking backends out of service
// for maintenance: the entries and the store that keeps them (a file for
// one replica, etcd for several), the readiness-budget rule a new entry is
// granted by, the admin API, the wire types the CLI shares, and the views
// that replicas sharing a store publish of themselves. The pool applies
// the entries in force (collector/pool, maintenance.go).
package maintenance

import (
	"context"
	"errors"

	"github.com/probegate/probegate/collector/pool"
)

// Store keeps the maintenance entries of one pool. Every write is a
// compare-and-swap against the revision the writer read, so a decision
// made on stale entries never lands: this is what makes the budget hold
// across replicas (the Kubernetes Eviction API's rule).
type Store interface {
	// Kind names the store: file or etcd.
	Kind() string
	// Shared reports whether other replicas read and write the store
	// too. An end of maintenance may then not take effect before the
	// store holds it, or replicas would disagree.
	Shared() bool
	// Load reads the entries and the revision they are at.
	Load(ctx context.Context) (State, error)
	// Swap replaces the entries when the store is still at revision rev,
	// and returns the new revision. When another write came first it
	// returns ErrConflict and changes nothing.
	Swap(ctx context.Context, rev int64, entries []pool.Maintenance) (int64, error)
	// Watch calls changed with every state the store reaches by another
	// writer's hand, newest last, until ctx ends. It returns at once for a
	// store no one else writes.
	Watch(ctx context.Context, changed func(State))
	// Close releases the store.
	Close() error
}

// State is the store's content at one revision.
type State struct {
	Entries []pool.Maintenance
	// Revision orders states: a larger one is newer. 0 is an empty store
	// never written.
	Revision int64
}

// ErrConflict is Swap's answer when the store moved past the revision the
// writer read.
var ErrConflict = errors.New("the maintenance entries changed since they were read")

// document is the stored form of the entries, in the file and in etcd.
type document struct {
	Maintenance []pool.Maintenance `json:"maintenance"`
}
