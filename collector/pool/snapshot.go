package pool

import (
	"time"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/history"
	"github.com/probegate/probegate/collector/outlier"
)

// The snapshots are the read side of the pool: Snapshot and BackendSnapshot
// are consistent copies of a pool and of one backend at one moment, taken
// under the pool's locks and then read without any. /metrics, /healthz,
// the status page and the maintenance API read these, so that what they
// show is plain data, which their tests build as literals without the
// pool's machinery. Nothing here reads a clock or takes a lock.

// Snapshot is a consistent view of a pool at one moment, for /healthz,
// /metrics and the status page.
type Snapshot struct {
	Backends  []BackendSnapshot
	InService int
	FailOpen  bool
	Budget    budget.Budget
	// Time is when the snapshot was taken, by the pool's clock.
	Time time.Time
	// PanicThreshold is the configured fail-open threshold in percent.
	PanicThreshold float64
	// PassiveHealth is whether passive health judges fan-out traffic;
	// PassiveSuppressed counts the passive ejections the readiness budget
	// did not allow.
	PassiveHealth     bool
	PassiveSuppressed uint64
	// Transitions is the pool's last state changes, newest first; only
	// the pool's SnapshotWithHistory fills it.
	Transitions []history.Transition
	// OutlierDetection is whether outlier detection judges the fan-out's
	// rounds; Suppressed counts the ejections the budget did not allow.
	OutlierDetection bool
	OutlierEnforcing bool
	Suppressed       [outlier.NumReasons]uint64
	// Groups are the replica groups with their replicas (Expected), the
	// replicas in service (CurrentHealthy) and their budget, in
	// configuration order of their first member. They are listed only
	// when some backend was given a group: in a pool without groups each
	// backend is a group of its own, which its own entry already shows.
	Groups []budget.Group
	// Fanout is whether the fan-out endpoint is enabled, and Maintenance
	// whether maintenance is in use (a store gave the pool its entries, or
	// an entry exists): the series of a feature that is off are not
	// exported.
	Fanout, Maintenance bool
	// Probing is shared probing's mode, ProbingShared or ProbingLocal,
	// empty while shared probing is off; Dissents counts, per vantage
	// point named a lone dissenter, the times it was named.
	Probing  string
	Dissents map[string]uint64
}
