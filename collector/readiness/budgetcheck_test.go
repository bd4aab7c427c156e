package readiness

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/gate"
)

// views are peer views, current or not (fresh).
func views(fresh bool, vs ...maintenance.ReplicaView) peerViews {
	return func() ([]maintenance.ReplicaView, bool) { return vs, fresh }
}

// TestBudgetCheck is the backends check, case by case: a budget that
// holds passes with its numbers; one that does not fails, unless readiness
// is peer-relative and no live peer is better off, when it passes with a
// warning and the override gauge says so.
func TestBudgetCheck(t *testing.T) {
	holds := budget.Budget{Expected: 3, CurrentHealthy: 2, DesiredHealthy: 2, DisruptionsAllowed: 0}
	short := budget.Budget{Expected: 3, CurrentHealthy: 1, DesiredHealthy: 2}
	for _, tc := range []struct {
		name       string
		budget     budget.Budget
		awaited    []string
		peers      peerViews
		output     string
		fails      bool
		warns      bool
		overridden bool
		says       string
	}{
		{name: "holds", budget: holds, output: "expected=3 current_healthy=2 desired_healthy=2 disruptions_allowed=0"},
		{name: "holds, peers not asked", budget: holds, peers: func() ([]maintenance.ReplicaView, bool) { panic("asked") },
			output: "expected=3 current_healthy=2 desired_healthy=2 disruptions_allowed=0"},
		{name: "short, plain", budget: short, fails: true, says: "readiness budget does not hold: expected=3 current_healthy=1"},
		{name: "short, a peer holds", budget: short, peers: views(true, maintenance.ReplicaView{Name: "b", BudgetHolds: true}),
			fails: true, says: "live peers holds (b)"},
		{name: "short, only a peer's groups hold", budget: short, peers: views(true, maintenance.ReplicaView{Name: "b", GroupsHold: true}),
			warns: true, overridden: true, says: "no live peer's budget holds either"},
		{name: "short, no peer holds", budget: short, peers: views(true, maintenance.ReplicaView{Name: "b"}),
			warns: true, overridden: true, says: "no live peer's budget holds either"},
		{name: "short, the holding peer drains", budget: short, peers: views(true, maintenance.ReplicaView{Name: "b", BudgetHolds: true, Draining: true}),
			warns: true, overridden: true, says: "no live peer's budget holds either"},
		{name: "short, views not current", budget: short, peers: views(false), fails: true, says: "not current"},
		{name: "holds, discovery awaited", budget: holds, awaited: []string{"dns_sd_configs[0]"}, fails: true,
			says: "waiting for service discovery: dns_sd_configs[0] has not delivered its first targets, so the pool is not known yet (so far expected=3"},
		{name: "short, discovery awaited, no peer holds", budget: short, awaited: []string{"file_sd_configs[1]"},
			peers: views(true, maintenance.ReplicaView{Name: "b"}), fails: true, says: "waiting for service discovery"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "override"})
			override := newPeerOverride(tc.peers, func() bool { return true }, gauge)
			check := budgetCheck(func() budget.Budget { return tc.budget }, func() []string { return tc.awaited }, override)
			output, err := check(context.Background())
			overridden := testutil.ToFloat64(gauge) == 1
			warned := errors.As(err, new(*gate.Warning))
			switch {
			case output != tc.output, overridden != tc.overridden, warned != tc.warns, (err != nil && !warned) != tc.fails:
				t.Errorf("output %q, overridden %v, err %v", output, overridden, err)
			case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
				t.Errorf("err %v; want it to say %q", err, tc.says)
			}
		})
	}
}

// TestBudgetCheckAsksPeersOnlyWhenPeerRelative: the override gauge
// follows the verdict, and with readiness.peer_relative off the peers are
// not asked and a short budget fails.
func TestBudgetCheckAsksPeersOnlyWhenPeerRelative(t *testing.T) {
	short := func() budget.Budget { return budget.Budget{Expected: 3, CurrentHealthy: 1, DesiredHealthy: 2} }
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "override"})
	relative := true
	check := budgetCheck(short, func() []string { return nil }, newPeerOverride(views(true, maintenance.ReplicaView{Name: "b"}), func() bool { return relative }, gauge))
	if _, err := check(context.Background()); !errors.As(err, new(*gate.Warning)) || testutil.ToFloat64(gauge) != 1 {
		t.Errorf("peer-relative, nobody better off: err %v, override %v; want a warning and 1", err, testutil.ToFloat64(gauge))
	}
	relative = false
	if _, err := check(context.Background()); err == nil || errors.As(err, new(*gate.Warning)) || testutil.ToFloat64(gauge) != 0 {
		t.Errorf("not peer-relative: err %v, override %v; want a failure and 0", err, testutil.ToFloat64(gauge))
	}
}
