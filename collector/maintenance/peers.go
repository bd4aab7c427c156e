package maintenance

import (
	"fmt"
	"strings"
)

// PeerVerdict is what peer-relative readiness makes of a replica whose own
// readiness budget does not hold.
type PeerVerdict int

const (
	// PeerFail: /ready fails, as with the plain budget.
	PeerFail PeerVerdict = iota
	// PeerWarn: /ready stays ready, with a warning, because no live peer
	// is better off.
	PeerWarn
)

// PeerBudget is a budget a replica view says holds or not, and that
// peer-relative readiness weighs against the peers'.
type PeerBudget int

const (
	// PoolBudget is the pool's readiness budget (budget_holds).
	PoolBudget PeerBudget = iota
	// GroupBudgets are the replica groups' budgets, all of them
	// (groups_hold).
	GroupBudgets
)

// heldBy reports whether view v says that b holds.
func (b PeerBudget) heldBy(v ReplicaView) bool {
	if b == GroupBudgets {
		return v.GroupsHold
	}
	return v.BudgetHolds
}

// words are b's name and the verb that says it holds, for the verdicts.
func (b PeerBudget) words() (noun, holds string) {
	if b == GroupBudgets {
		return "replica group budgets", "hold"
	}
	return "budget", "holds"
}

// JudgePeers decides peer-relative readiness for a replica whose own
// budget b does not hold. When b holds for some live peer, traffic can
// move there and this replica's view is the worse one (a local partition,
// say): it fails. When it holds for no live peer, every replica sees the
// same outage, and withdrawing them all would only replace the answers
// that explain it (which backend failed, and why) with a balancer's bare
// 503: it stays ready with a warning. A draining peer is no refuge, and
// without a current view of the peers (fresh false: the store is
// unreachable) the plain budget rules. It is pure: the caller brings the
// peers.
func JudgePeers(peers []ReplicaView, fresh bool, b PeerBudget) (PeerVerdict, string) {
	if !fresh {
		return PeerFail, "the replica views are not current (store unreachable): the plain budget decides"
	}
	var holding []string
	for _, p := range peers {
		if b.heldBy(p) && !p.Draining {
			holding = append(holding, p.Name)
		}
	}
	noun, holds := b.words()
	if len(holding) > 0 {
		return PeerFail, fmt.Sprintf("the %s of live peers %s (%s): traffic can move there", noun, holds, strings.Join(holding, ", "))
	}
	return PeerWarn, fmt.Sprintf("no live peer's %s %s either (%d peers): staying ready so that clients get the answers that explain the outage", noun, holds, len(peers))
}
