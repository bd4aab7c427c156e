package store

import (
	"context"
	"errors"

	"github.com/probegate/probegate/collector/fleet"
)

// Verdicts is where replicas that probe together publish the verdicts of
// the backends they probe and read each other's: the etcd store only, so
// a caller holding a Store asks for it with a type assertion.
type Verdicts interface {
	// VerdictKey is the key of the verdict replica publishes of backend.
	VerdictKey(replica, backend string) string
	// PublishVerdicts writes one write of fleet.Split in one
	// transaction, every put under this replica's view lease, and
	// returns that lease's id: a new id means every verdict written
	// under the old one is gone or going. Without a view lease it
	// writes nothing and its error wraps ErrNoViewLease.
	PublishVerdicts(ctx context.Context, ops []fleet.Op) (int64, error)
	// ViewLease is the id of this replica's view lease now, 0 for none,
	// without waiting for a publication in progress: a change means
	// that every verdict written under the lease before is gone, or
	// going with it.
	ViewLease() int64
	// WatchVerdicts hands on every replica's verdicts, first all of
	// them at one revision (Reset), then each change, until ctx ends.
	WatchVerdicts(ctx context.Context, update func(VerdictUpdate))
}

// ErrNoViewLease is in the error of PublishVerdicts when this replica
// holds no view lease: its view was not published yet, or its lease
// ended. The next publication of its view grants a new one.
var ErrNoViewLease = errors.New("this replica holds no view lease: its verdicts are written only once its view is published")

// MaxVerdictKeys bounds the keys one read of the verdicts takes, whatever
// the store holds: 10,000 backends with 20 vantage points each, far beyond
// a real pool (a few vantage points per backend), and some 40 MiB held
// at most. A read that reaches it hands on the keys it took, the first in
// key order, and the rest of the pool's backends then have no verdict
// here: they are probed locally, which is the safe side. Keys that are
// skipped (no lease, too large, not a verdict key) count towards the
// bound too, since they were read; whoever may write such keys under the
// prefix may delete the real ones as well.
const MaxVerdictKeys = 200_000

// StoredVerdict is one verdict key as the store holds it.
type StoredVerdict struct {
	// Replica and Backend are what the key names.
	Replica, Backend string
	// Value is the encoded verdict (fleet.Decode reads it); nil when the
	// key was deleted, its lease ended, or it no longer holds a verdict
	// that counts (rewritten without a lease, or too large).
	Value []byte
}

// VerdictUpdate is one step of WatchVerdicts.
type VerdictUpdate struct {
	// Reset says that Verdicts replace everything handed on before: a
	// fresh read.
	Reset bool
	// Verdicts are the verdicts read, or those one change touched.
	Verdicts []StoredVerdict
	// Err says the verdicts could not be read or the watch broke; nothing
	// else is set then. The store is unsynced until the next update
	// without an Err, which is a Reset.
	Err error
	// Revision is the store's revision of the read or of the change.
	Revision int64
}
