package maintenance

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/probegate/probegate/internal/testclock"
)

// TestLapsedViewIsListedStaleNeverReady: a peer's view that this replica
// read live and then found gone (its lease lapsed) stays listed, marked
// stale and not ready, with when it lapsed, for staleViewRetention; it is
// no peer and no live replica meanwhile, and a view published again is
// live again.
func TestLapsedViewIsListedStaleNeverReady(t *testing.T) {
	clock := testclock.New(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	registry := newMemRegistry(t, ReplicaView{Name: "r1", Ready: true}, ReplicaView{Name: "r2", Ready: true, BudgetHolds: true})
	r := NewReplicas(registry, func(context.Context) ReplicaView { return ReplicaView{Name: "r1"} }, prometheus.NewRegistry(), nil, clock.Now)
	r.refresh(t.Context())
	if live := r.Live(); len(live) != 2 || live[1].Stale || !live[1].Ready {
		t.Fatalf("listed %+v; want r1 and r2, both live", live)
	}

	registry.mu.Lock()
	delete(registry.views, "r2")
	registry.mu.Unlock()
	clock.Advance(time.Second)
	lapsed := clock.Now()
	r.refresh(t.Context())
	listed := r.Live()
	if len(listed) != 2 || listed[1].Name != "r2" || !listed[1].Stale || listed[1].Ready || !listed[1].Lapsed.Equal(lapsed) {
		t.Fatalf("listed %+v; want r2 stale, not ready, lapsed at %v", listed, lapsed)
	}
	if data, _ := json.Marshal(listed[1]); !json.Valid(data) || !containsAll(string(data), `"stale":true`, `"ready":false`, `"lapsed":`) {
		t.Errorf("the stale view as JSON %s; want stale true, ready false and lapsed", data)
	}
	if listed[0].Stale {
		t.Errorf("the live r1 is marked stale: %+v", listed[0])
	}
	if peers, _ := r.Peers("r1"); len(peers) != 0 {
		t.Errorf("peers %+v; a stale view is no peer", peers)
	}
	if got := testutil.ToFloat64(r.gauge.WithLabelValues("ready")); got != 1 {
		t.Errorf("probegate_replicas{state=ready} = %v; want 1, the stale view uncounted", got)
	}

	clock.Advance(staleViewRetention - 2*time.Second)
	r.refresh(t.Context())
	if listed := r.Live(); len(listed) != 2 || !listed[1].Stale || !listed[1].Lapsed.Equal(lapsed) {
		t.Errorf("just within the retention, listed %+v; want r2 still stale since %v", listed, lapsed)
	}
	clock.Advance(2 * time.Second)
	r.refresh(t.Context())
	if listed := r.Live(); len(listed) != 1 || listed[0].Name != "r1" {
		t.Errorf("past the retention, listed %+v; want r1 alone", listed)
	}

	// Lapsed, then back: live again, not stale.
	registry.mu.Lock()
	registry.views["r2"], _ = json.Marshal(ReplicaView{Name: "r2", Ready: true})
	registry.mu.Unlock()
	r.refresh(t.Context())
	registry.mu.Lock()
	delete(registry.views, "r2")
	registry.mu.Unlock()
	r.refresh(t.Context())
	registry.mu.Lock()
	registry.views["r2"], _ = json.Marshal(ReplicaView{Name: "r2", Ready: true})
	registry.mu.Unlock()
	r.refresh(t.Context())
	if listed := r.Live(); len(listed) != 2 || listed[1].Stale || !listed[1].Ready || !listed[1].Lapsed.IsZero() {
		t.Errorf("after r2 published again, listed %+v; want it live", listed)
	}
}

// TestStoreUnreachableMarksNoViewStale: a read that fails says nothing
// of the leases, so the views keep their last state.
func TestStoreUnreachableMarksNoViewStale(t *testing.T) {
	clock := testclock.New(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	registry := newMemRegistry(t, ReplicaView{Name: "r1"}, ReplicaView{Name: "r2", Ready: true})
	r := NewReplicas(registry, func(context.Context) ReplicaView { return ReplicaView{Name: "r1"} }, prometheus.NewRegistry(), nil, clock.Now)
	r.refresh(t.Context())
	registry.mu.Lock()
	registry.down = true
	registry.mu.Unlock()
	r.refresh(t.Context())
	if listed := r.Live(); len(listed) != 2 || listed[1].Stale || !listed[1].Ready {
		t.Errorf("with the store unreachable, listed %+v; want the last read as it was", listed)
	}
}

// TestPeersCannotClaimStale: staleness is this replica's observation; a
// view that says it is stale, or when it lapsed, is read as live.
func TestPeersCannotClaimStale(t *testing.T) {
	registry := newMemRegistry(t, ReplicaView{Name: "r1"}, ReplicaView{Name: "r2", Ready: true, Stale: true, Lapsed: time.Unix(1, 0)})
	r := NewReplicas(registry, func(context.Context) ReplicaView { return ReplicaView{Name: "r1"} }, prometheus.NewRegistry(), nil, time.Now)
	r.refresh(t.Context())
	if listed := r.Live(); len(listed) != 2 || listed[1].Stale || !listed[1].Lapsed.IsZero() {
		t.Errorf("listed %+v; want r2 live as read", listed)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
