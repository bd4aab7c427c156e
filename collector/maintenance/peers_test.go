package maintenance

import (
	"strings"
	"testing"
)

// TestJudgePeers: a replica whose budget does not hold fails when a live,
// non-draining peer's budget holds, stays ready with a warning when none
// does, and fails when the peers' views are not current; the pool's
// budget and the replica groups' are each judged by what the views say of
// that one.
func TestJudgePeers(t *testing.T) {
	holds := func(name string) ReplicaView { return ReplicaView{Name: name, BudgetHolds: true, Ready: true} }
	broken := func(name string) ReplicaView { return ReplicaView{Name: name} }
	draining := func(name string) ReplicaView { v := holds(name); v.Draining = true; return v }
	groupsHold := func(name string) ReplicaView { return ReplicaView{Name: name, GroupsHold: true, Ready: true} }
	for _, c := range []struct {
		name   string
		peers  []ReplicaView
		fresh  bool
		budget PeerBudget
		want   PeerVerdict
		says   string
	}{
		{"no peers", nil, true, PoolBudget, PeerWarn, "no live peer's budget holds either (0 peers)"},
		{"every peer broken", []ReplicaView{broken("r2"), broken("r3")}, true, PoolBudget, PeerWarn, "(2 peers)"},
		{"one peer holds", []ReplicaView{broken("r2"), holds("r3")}, true, PoolBudget, PeerFail, "live peers holds (r3)"},
		{"two peers hold", []ReplicaView{holds("r2"), holds("r3")}, true, PoolBudget, PeerFail, "(r2, r3)"},
		{"only a draining peer holds", []ReplicaView{draining("r2"), broken("r3")}, true, PoolBudget, PeerWarn, "(2 peers)"},
		{"views not current", []ReplicaView{broken("r2")}, false, PoolBudget, PeerFail, "not current"},
		{"views not current, a peer holds", []ReplicaView{holds("r2")}, false, PoolBudget, PeerFail, "plain budget decides"},
		{"groups: a peer's groups hold", []ReplicaView{holds("r2"), groupsHold("r3")}, true, GroupBudgets, PeerFail,
			"the replica group budgets of live peers hold (r3)"},
		{"groups: only the pool budget of peers holds", []ReplicaView{holds("r2")}, true, GroupBudgets, PeerWarn,
			"no live peer's replica group budgets hold either (1 peers)"},
		{"pool: only the groups of peers hold", []ReplicaView{groupsHold("r2")}, true, PoolBudget, PeerWarn, "no live peer's budget holds either"},
		{"groups: views not current", []ReplicaView{groupsHold("r2")}, false, GroupBudgets, PeerFail, "plain budget decides"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, why := JudgePeers(c.peers, c.fresh, c.budget)
			if got != c.want || !strings.Contains(why, c.says) {
				t.Errorf("JudgePeers = %v %q, want %v saying %q", got, why, c.want, c.says)
			}
		})
	}
}
