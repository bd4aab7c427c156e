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

// JudgePeers decides peer-relative readiness for a replica whose own
// budget does not hold. When some live peer's budget holds, traffic can
// move there and this replica's view is the worse one (a local partition,
// say): it fails. When no live peer's budget holds, every replica sees the
// same outage, and withdrawing them all would only replace the answers
// that explain it (which backend failed, and why) with a balancer's bare
// 503: it stays ready with a warning. A draining peer is no refuge, and
// without a current view of the peers (fresh false: the store is
// unreachable) the plain budget rules. It is pure: the caller brings the
// peers.
func JudgePeers(peers []ReplicaView, fresh bool) (PeerVerdict, string) {
	if !fresh {
		return PeerFail, "the replica views are not current (store unreachable): the plain budget decides"
	}
	var holding []string
	for _, p := range peers {
		if p.BudgetHolds && !p.Draining {
			holding = append(holding, p.Name)
		}
	}
	if len(holding) > 0 {
		return PeerFail, fmt.Sprintf("the budget of live peers holds (%s): traffic can move there", strings.Join(holding, ", "))
	}
	return PeerWarn, fmt.Sprintf("no live peer's budget holds either (%d peers): staying ready so that clients get the answers that explain the outage", len(peers))
}
