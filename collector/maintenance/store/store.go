// Package store keeps the maintenance entries of a pool: the Store every
// write goes through, the file store of a single replica (with the lock
// of its directory), and the etcd store that replicas share, which also
// holds the views they publish of themselves. It knows nothing of the
// budget rule or the API: collector/maintenance decides what to write.
//
// A new store is one file here with a type that implements Store, its
// name and settings in config/maintenance.go, and a case in Open and in
// CheckReload.
package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/probegate/probegate/collector/maintenance/entries"
	"github.com/probegate/probegate/config"
)

// CheckReload refuses a reload whose maintenance block (now) changes the
// store that was opened with was: the replica's entries and its peers
// come from it, so only a restart may change it. max_ttl may change.
func CheckReload(was, now config.Maintenance) error {
	switch {
	case was.Store != now.Store:
		return fmt.Errorf("maintenance.store changed from %s to %s: restart probegate to apply it", was.Store, now.Store)
	case !reflect.DeepEqual(was.Etcd, now.Etcd):
		return errors.New("maintenance.etcd changed: restart probegate to apply it")
	}
	return nil
}

// Store keeps the maintenance entries of one pool. Every write is a
// compare-and-swap against the revision the writer read, so a decision
// made on stale entries never lands: this is what makes the budget hold
// across replicas (the Kubernetes Eviction API's rule).
type Store interface {
	// Kind names the store, as maintenance.store does: file or etcd.
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
	Swap(ctx context.Context, rev int64, entries []entries.Entry) (int64, error)
	// Watch calls changed with every state the store reaches by another
	// writer's hand, newest last, until ctx ends. It returns at once for a
	// store no one else writes.
	Watch(ctx context.Context, changed func(State))
	// Close releases the store.
	Close() error
}

// State is the store's content at one revision.
type State struct {
	Entries []entries.Entry
	// Revision orders states: a larger one is newer. 0 is an empty store
	// never written.
	Revision int64
}

// ErrConflict is Swap's answer when the store moved past the revision the
// writer read.
var ErrConflict = errors.New("the maintenance entries changed since they were read")

// Open opens the store that cfg names, for a running probegate. The file
// store keeps its file in dir and holds the directory's lock until Close,
// so that an offline `probegate maintenance stop` cannot write under it.
// A missing directory is created and locked only when create is set (the
// admin API is on, and will write there); otherwise a probegate that
// never stores an entry leaves no directory behind. An etcd store does
// not wait for its cluster: one that cannot be reached shows in the first
// Load.
func Open(cfg config.Maintenance, dir string, create bool) (Store, error) {
	switch cfg.Store {
	case config.StoreEtcd:
		return openEtcd(cfg.Etcd)
	default:
		return openLockedFile(dir, create)
	}
}
