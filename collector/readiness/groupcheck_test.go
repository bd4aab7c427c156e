package readiness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/gate"
)

// group is a budgeted replica group of replicas with inService in
// service, needing desired.
func group(name string, replicas, inService, desired int) budget.Group {
	return budget.Group{Name: name, Budgeted: true,
		Budget: budget.Budget{Expected: replicas, CurrentHealthy: inService, DesiredHealthy: desired, DisruptionsAllowed: max(0, inService-desired)}}
}

// TestJudgeGroups: the group_budget check passes while every group holds
// its budget or per_group is off, and fails naming each group below it,
// at most maxNamedGroups of them.
func TestJudgeGroups(t *testing.T) {
	alone := budget.Group{Name: "c", Budget: budget.Budget{Expected: 1}}
	for _, tc := range []struct {
		name   string
		groups []budget.Group
		fails  bool
		says   string
	}{
		{name: "off", groups: nil, says: "off: readiness.per_group is not set"},
		{name: "holding", groups: []budget.Group{group("a", 2, 1, 1), group("b", 2, 2, 1), alone},
			says: "2 of 3 replica groups have a budget, and every one holds"},
		{name: "one below", groups: []budget.Group{group("a", 2, 0, 1), group("b", 2, 2, 1), alone}, fails: true,
			says: "replica groups below their budget: a (0 of 2 in service, 1 needed)"},
		{name: "two below", groups: []budget.Group{group("a", 2, 0, 1), group("b", 3, 1, 2)}, fails: true,
			says: "replica groups below their budget: a (0 of 2 in service, 1 needed), b (1 of 3 in service, 2 needed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			output, err := groupBudgetCheck(func() []budget.Group { return tc.groups }, newPeerOverride(nil, nil, nil))(context.Background())
			got := output
			if err != nil {
				got = err.Error()
			}
			if (err != nil) != tc.fails || got != tc.says {
				t.Errorf("check = %q, %v; want %q failing %v", output, err, tc.says, tc.fails)
			}
		})
	}
	var many []budget.Group
	for i := range 25 {
		many = append(many, group(fmt.Sprintf("g%d", i), 2, 0, 1))
	}
	if _, failed := judgeGroups(many); strings.Count(failed, "in service") != maxNamedGroups || !strings.HasSuffix(failed, "and 15 more") {
		t.Errorf("25 groups below: %q; want %d named and 15 more", failed, maxNamedGroups)
	}
}

// TestGroupBudgetCheckPeerRelative: with readiness.peer_relative, a group
// below its budget fails the check only while a live peer's groups hold
// theirs (traffic can move there); when no peer's do (one dead shard,
// seen by every replica), the check passes with a warning and the
// override gauge is 1, so that every other shard's answers still flow.
// The gauge is shared with the backends check: it stays 1 while either
// check passes on the override.
func TestGroupBudgetCheckPeerRelative(t *testing.T) {
	dead := func() []budget.Group { return []budget.Group{group("s1", 2, 0, 1), group("s2", 2, 2, 1)} }
	short := func() budget.Budget { return budget.Budget{Expected: 4, CurrentHealthy: 1, DesiredHealthy: 2} }
	noAwait := func() []string { return nil }
	for _, tc := range []struct {
		name       string
		peers      peerViews
		relative   bool
		warns      bool
		overridden bool
		says       string
	}{
		{name: "a live peer's groups hold", relative: true,
			peers: views(true, maintenance.ReplicaView{Name: "r1"}, maintenance.ReplicaView{Name: "r2", GroupsHold: true}),
			says:  "replica groups below their budget: s1 (0 of 2 in service, 1 needed); the replica group budgets of live peers hold (r2)"},
		{name: "no peer's groups hold", relative: true, warns: true, overridden: true,
			peers: views(true, maintenance.ReplicaView{Name: "r1", BudgetHolds: true}, maintenance.ReplicaView{Name: "r2", BudgetHolds: true}),
			says:  "replica groups below their budget: s1 (0 of 2 in service, 1 needed); no live peer's replica group budgets hold either (2 peers)"},
		{name: "a peer too old to say", relative: true, warns: true, overridden: true,
			peers: views(true, maintenance.ReplicaView{Name: "r1", BudgetHolds: true, Ready: true}),
			says:  "no live peer's replica group budgets hold either (1 peers)"},
		{name: "the holding peer drains", relative: true, warns: true, overridden: true,
			peers: views(true, maintenance.ReplicaView{Name: "r1", GroupsHold: true, Draining: true}),
			says:  "no live peer's replica group budgets hold either"},
		{name: "views not current", relative: true, peers: views(false, maintenance.ReplicaView{Name: "r1"}),
			says: "plain budget decides"},
		{name: "not peer-relative", peers: views(true, maintenance.ReplicaView{Name: "r1"}),
			says: "replica groups below their budget: s1 (0 of 2 in service, 1 needed)"},
		{name: "no shared store", relative: true,
			says: "replica groups below their budget: s1 (0 of 2 in service, 1 needed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "override"})
			override := newPeerOverride(tc.peers, func() bool { return tc.relative }, gauge)
			_, err := groupBudgetCheck(dead, override)(context.Background())
			warned := errors.As(err, new(*gate.Warning))
			if err == nil || warned != tc.warns || (testutil.ToFloat64(gauge) == 1) != tc.overridden || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err %v (warning %v), override %v; want warning %v, override %v, saying %q",
					err, warned, testutil.ToFloat64(gauge), tc.warns, tc.overridden, tc.says)
			}
		})
	}

	// One gauge for both checks: the groups' override keeps it at 1
	// whatever the pool's budget says, and it falls to 0 once neither
	// check passes on it.
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "override"})
	peerGroupsHold := false
	peers := func() ([]maintenance.ReplicaView, bool) {
		return []maintenance.ReplicaView{{Name: "r1", BudgetHolds: true, GroupsHold: peerGroupsHold}}, true
	}
	override := newPeerOverride(peers, func() bool { return true }, gauge)
	groups := groupBudgetCheck(dead, override)
	pool := budgetCheck(short, noAwait, override)
	groups(context.Background())
	if _, err := pool(context.Background()); err == nil || errors.As(err, new(*gate.Warning)) || testutil.ToFloat64(gauge) != 1 {
		t.Errorf("groups overridden, pool budget failing: err %v, override %v; want a failure and 1", err, testutil.ToFloat64(gauge))
	}
	peerGroupsHold = true
	if _, err := groups(context.Background()); err == nil || errors.As(err, new(*gate.Warning)) || testutil.ToFloat64(gauge) != 0 {
		t.Errorf("nothing overridden: err %v, override %v; want a failure and 0", err, testutil.ToFloat64(gauge))
	}
}
