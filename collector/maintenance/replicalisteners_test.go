package maintenance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/internal/testclock"
)

// hugeListeners are listeners far beyond every bound, each entry as long
// as a bound allows.
func hugeListeners() *ReplicaListeners {
	l := &ReplicaListeners{}
	for i := range 1000 {
		l.Addresses = append(l.Addresses, fmt.Sprintf("%0*d", maxAddressBytes, i))
		l.HostAddresses = append(l.HostAddresses, fmt.Sprintf("%0*d", maxAddressBytes, i))
		l.HostNames = append(l.HostNames, fmt.Sprintf("%0*d", maxHostNameBytes, i))
	}
	return l
}

// TestMaximalViewFitsTheStore: a view whose host has more addresses and
// names than any bound is published within the bounds, its listeners
// under 8 KiB, so the view stays far under the store's limit; a peer's
// view read back is bounded alike.
func TestMaximalViewFitsTheStore(t *testing.T) {
	registry := newMemRegistry(t)
	self := func(context.Context) ReplicaView {
		return ReplicaView{Name: strings.Repeat("r", 256), Version: strings.Repeat("v", 64), Listeners: hugeListeners()}
	}
	r := NewReplicas(registry, self, prometheus.NewRegistry(), nil, time.Now)
	if err := r.publish(t.Context(), self(t.Context())); err != nil {
		t.Fatal(err)
	}
	data := registry.views[strings.Repeat("r", 256)]
	if len(data) > store.MaxViewBytes {
		t.Fatalf("a view of %d bytes; the store reads at most %d", len(data), store.MaxViewBytes)
	}
	var v ReplicaView
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	listeners, _ := json.Marshal(v.Listeners)
	if len(listeners) > 8<<10 || len(v.Listeners.Addresses) != maxListenerAddresses || len(v.Listeners.HostAddresses) != maxHostAddresses || len(v.Listeners.HostNames) != maxHostNames {
		t.Errorf("listeners of %d bytes, %d, %d and %d entries; want under 8 KiB at the bounds", len(listeners),
			len(v.Listeners.Addresses), len(v.Listeners.HostAddresses), len(v.Listeners.HostNames))
	}

	huge, _ := json.Marshal(ReplicaView{Name: "r2", Listeners: &ReplicaListeners{HostNames: []string{strings.Repeat("n", 300), "ok"}, Addresses: hugeListeners().Addresses}})
	views, _ := checkViews([]store.StoredView{{Name: "r2", Value: huge}})
	if got := views[0].Listeners; len(got.HostNames) != 1 || got.HostNames[0] != "ok" || len(got.Addresses) != maxListenerAddresses {
		t.Errorf("a peer's listeners read back %d names %v and %d addresses; want the one short name and %d", len(got.HostNames), got.HostNames, len(got.Addresses), maxListenerAddresses)
	}
}

// TestPeerListenersAreFollowed: whoever follows the peers' listeners is
// given them at the first read and at every read that changes them, not
// otherwise: this replica's own left out, a peer that says none left out,
// and a peer whose lease lapsed left out at once. Its view stays listed,
// stale, for people; it is no loop any more: a replica that started after
// it lapsed never saw it, and every replica must judge alike.
func TestPeerListenersAreFollowed(t *testing.T) {
	clock := testclock.New(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	at := func(addr string) *ReplicaListeners { return &ReplicaListeners{Addresses: []string{addr}} }
	registry := newMemRegistry(t, ReplicaView{Name: "r1", Listeners: at("127.0.0.1:1")}, ReplicaView{Name: "r2", Listeners: at("127.0.0.1:2")},
		ReplicaView{Name: "r3"})
	r := NewReplicas(registry, func(context.Context) ReplicaView { return ReplicaView{Name: "r1"} }, prometheus.NewRegistry(), nil, clock.Now)
	var given [][]string
	r.FollowPeerListeners("r1", func(peers []ReplicaListeners) {
		var addrs []string
		for _, p := range peers {
			addrs = append(addrs, p.Addresses...)
		}
		given = append(given, addrs)
	})
	setView := func(v *ReplicaView, name string) {
		registry.mu.Lock()
		defer registry.mu.Unlock()
		if v == nil {
			delete(registry.views, name)
			return
		}
		registry.views[name], _ = json.Marshal(v)
	}
	r.refresh(t.Context())
	r.refresh(t.Context())
	setView(&ReplicaView{Name: "r4", Listeners: at("127.0.0.1:4")}, "r4")
	r.refresh(t.Context())
	setView(nil, "r2") // r2 lapses: listed stale, no longer a loop
	r.refresh(t.Context())
	want := [][]string{{"127.0.0.1:2"}, {"127.0.0.1:2", "127.0.0.1:4"}, {"127.0.0.1:4"}}
	if !slices.EqualFunc(given, want, slices.Equal) {
		t.Errorf("given %q; want %q", given, want)
	}
	if listed := r.Live(); !slices.ContainsFunc(listed, func(v ReplicaView) bool { return v.Name == "r2" && v.Stale }) {
		t.Errorf("listed %+v; want r2 still listed, stale", listed)
	}
	clock.Advance(staleViewRetention)
	r.refresh(t.Context())
	if len(given) != len(want) {
		t.Errorf("given %q once r2's stale view was dropped; want nothing new", given[len(want):])
	}
}
