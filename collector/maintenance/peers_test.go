package maintenance

import (
	"strings"
	"testing"
)

// TestJudgePeers: a replica whose budget does not hold fails when a live,
// non-draining peer's budget holds, stays ready with a warning when none
// does, and fails when the peers' views are not current.
func TestJudgePeers(t *testing.T) {
	holds := func(name string) ReplicaView { return ReplicaView{Name: name, BudgetHolds: true, Ready: true} }
	broken := func(name string) ReplicaView { return ReplicaView{Name: name} }
	draining := func(name string) ReplicaView { v := holds(name); v.Draining = true; return v }
	for _, c := range []struct {
		name  string
		peers []ReplicaView
		fresh bool
		want  PeerVerdict
		says  string
	}{
		{"no peers", nil, true, PeerWarn, "no live peer's budget holds either (0 peers)"},
		{"every peer broken", []ReplicaView{broken("r2"), broken("r3")}, true, PeerWarn, "(2 peers)"},
		{"one peer holds", []ReplicaView{broken("r2"), holds("r3")}, true, PeerFail, "live peers holds (r3)"},
		{"two peers hold", []ReplicaView{holds("r2"), holds("r3")}, true, PeerFail, "(r2, r3)"},
		{"only a draining peer holds", []ReplicaView{draining("r2"), broken("r3")}, true, PeerWarn, "(2 peers)"},
		{"views not current", []ReplicaView{broken("r2")}, false, PeerFail, "not current"},
		{"views not current, a peer holds", []ReplicaView{holds("r2")}, false, PeerFail, "plain budget decides"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, why := JudgePeers(c.peers, c.fresh)
			if got != c.want || !strings.Contains(why, c.says) {
				t.Errorf("JudgePeers = %v %q, want %v saying %q", got, why, c.want, c.says)
			}
		})
	}
}
