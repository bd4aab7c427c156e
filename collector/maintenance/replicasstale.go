package maintenance

import (
	"slices"
	"time"

	"github.com/probegate/probegate/collector/maintenance/store"
)

// staleViewRetention is how long a view whose lease this replica saw
// lapse stays listed, marked stale: long enough for an operator to see
// that a replica went away, and when, and for a restarted replica to come
// back under the same name; bounded so that a fleet whose replicas are
// renamed at every rollout does not list every name it ever had.
const staleViewRetention = 10 * time.Minute

// lapsedViews are the stale views after a read of the store found live:
// those stale before that are not live again and lapsed less than
// staleViewRetention ago, and those live at the last read (wasLive) that
// this read did not find live, lapsed now, marked stale and not ready. At
// most store.MaxViews are kept, the latest to lapse. A read that failed
// is no evidence of a lapse, so the caller does not call this after one.
// It is pure: now is given.
func lapsedViews(wasLive, wasStale, live []ReplicaView, now time.Time) []ReplicaView {
	isLive := make(map[string]bool, len(live))
	for _, v := range live {
		isLive[v.Name] = true
	}
	var stale []ReplicaView
	for _, v := range wasStale {
		if !isLive[v.Name] && now.Sub(v.Lapsed) < staleViewRetention {
			stale = append(stale, v)
		}
	}
	for _, v := range wasLive {
		if !isLive[v.Name] {
			v.Stale, v.Ready, v.Lapsed = true, false, now
			stale = append(stale, v)
		}
	}
	if len(stale) > store.MaxViews {
		slices.SortStableFunc(stale, func(a, b ReplicaView) int { return b.Lapsed.Compare(a.Lapsed) })
		stale = stale[:store.MaxViews]
	}
	return stale
}
