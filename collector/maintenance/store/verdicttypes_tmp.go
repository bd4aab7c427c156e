package store

import (
	"context"
	"errors"

	"github.com/probegate/probegate/collector/fleet"
)

// Placeholder until the store's publication lands.

var ErrNoViewLease = errors.New("no view lease")

type StoredVerdict struct {
	Replica, Backend string
	Value            []byte
}

type VerdictUpdate struct {
	Reset    bool
	Verdicts []StoredVerdict
	Err      error
	Revision int64
}

type Verdicts interface {
	VerdictKey(replica, backend string) string
	PublishVerdicts(ctx context.Context, ops []fleet.Op) (int64, error)
	WatchVerdicts(ctx context.Context, update func(VerdictUpdate))
}
