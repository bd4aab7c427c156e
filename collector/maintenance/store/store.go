// Package store keeps the maintenance entries of a pool: the Store every
// write goes through, the file store of a single replica (with the lock
// of its directory), and the etcd store that replicas share, which also
// holds the views they publish of themselves and the verdicts of the
// backends they probe together (Verdicts). It knows nothing of the
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
	"time"

	"github.com/probegate/probegate/collector/entries"
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
// compare-and-swap against the state the writer read, so a decision made
// on stale entries never lands: this is what makes the budget hold across
// replicas (the Kubernetes Eviction API's rule).
type Store interface {
	// Kind names the store, as maintenance.store does: file or etcd.
	Kind() string
	// Shared reports whether other replicas read and write the store
	// too. The store then measures the entries' ttls (no replica's
	// clock ends an entry), a write is decided by the store alone, and
	// an end of maintenance may not take effect before the store holds
	// it, or replicas would disagree.
	Shared() bool
	// Load reads the entries in force and the revision they are at. A
	// store whose stored data is corrupt answers a *CorruptError along
	// with the revision it read.
	Load(ctx context.Context) (State, error)
	// Swap stores w when the store is still where base was read, and
	// returns the state it wrote. When another write came first (or the
	// stored data was deleted or rewritten since) it returns
	// ErrConflict and changes nothing.
	Swap(ctx context.Context, base State, w Write) (State, error)
	// Watch calls changed with every state the store reaches, newest
	// last, and with every error reading it (a *CorruptError among
	// them, and ErrCompacted before a fresh read), until ctx ends. It starts from a read, and after that
	// never hands on a state older than one it handed on. It returns at
	// once for a store no one else writes.
	Watch(ctx context.Context, changed func(State, error))
	// Close releases the store.
	Close() error
}

// State is the store's content at one revision. It carries bookkeeping
// of the store's own (the leases of a shared store), so a state handed to
// Swap as its base is one the store gave, with its Entries changed at
// most, never one built from its exported fields.
type State struct {
	// Entries are the entries in force at Revision.
	Entries []entries.Entry
	// Revision orders states: a larger one is newer. It is the store's
	// revision the state was read at, 0 for a store never read.
	Revision int64
	// Token is what a compare-and-swap compares: the revision at which
	// the stored entries were last written, 0 when none are stored.
	Token int64
	// leases maps the backends of Entries bound to a lease of a shared
	// store (etcd) to that lease: a write needs them to end the right
	// leases, and the applied state keeps them so that a replica
	// restarted while the store is away can check its entries against
	// the lease keys once they can be read. In a state whose document is
	// corrupt it maps every lease key read to its lease instead: the
	// keys decide removals then (EndedByLeases). nil for a store without
	// leases.
	leases map[string]int64
}

// Write is what a compare-and-swap stores: the entries, and how long the
// one entry it grants lasts.
type Write struct {
	// Entries are every entry the store is to hold.
	Entries []entries.Entry
	// Granted names the backend whose entry this write grants or
	// renews, empty when it grants none (an end of maintenance, a
	// tidying).
	Granted string
	// TTL is how long the granted entry lasts, 0 until it is ended. A
	// shared store measures it on its own clock (etcd: a lease);
	// Entry.Until is then for people only.
	TTL time.Duration
}

// ErrConflict is Swap's answer when the store moved past the state the
// writer read.
var ErrConflict = errors.New("the maintenance entries changed since they were read")

// ErrCompacted is in the error a Watch hands on when its watch had to
// resume from a revision the store has compacted: the changes since are
// lost to it, so it reads the state afresh and hands that on next. The
// store answered; it says nothing of the store's health.
var ErrCompacted = errors.New("the watch resumes from a compacted revision: the entries are read afresh")

// CorruptError is the error of a stored state that cannot be read. It
// fails closed: the entries last read stay in force and nothing is
// written over it until an operator repairs or deletes it.
type CorruptError struct {
	// Key names what is corrupt: a file or an etcd key.
	Key string
	// Revision is the store's revision of the corrupt data.
	Revision int64
	Err      error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s at revision %d is corrupt: %v", e.Key, e.Revision, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

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
