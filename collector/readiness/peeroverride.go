package readiness

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/gate"
)

// peerViews are the live peers' views and whether they are current, as
// maintenance.Replicas.Peers gives them.
type peerViews func() ([]maintenance.ReplicaView, bool)

// peerOverride is peer-relative readiness (readiness.peer_relative) as
// every check that judges a budget shares it: the pool's (`backends`) and
// the replica groups' (`group_budget`). A budget that does not hold fails
// its check only when it holds for some live peer; otherwise the check
// passes with a warning, and probegate_readiness_peer_override is 1 while
// any check passes so.
type peerOverride struct {
	// peers is nil without a shared store: there are no peers, and the
	// plain budgets decide.
	peers    peerViews
	relative func() bool
	// gauge is probegate_readiness_peer_override, nil without a shared
	// store.
	gauge prometheus.Gauge

	mu sync.Mutex
	// overridden holds the budgets whose check passed on the override
	// when last judged.
	overridden map[maintenance.PeerBudget]bool
}

// newPeerOverride is the override over peers, in force while relative()
// is true, reported in gauge. peers and gauge are nil without a shared
// store.
func newPeerOverride(peers peerViews, relative func() bool, gauge prometheus.Gauge) *peerOverride {
	return &peerOverride{peers: peers, relative: relative, gauge: gauge, overridden: map[maintenance.PeerBudget]bool{}}
}

// judge is the answer of the check of budget b, which does not hold when
// failed says why (empty when it holds): nil when it holds, and otherwise
// judgeAgainstPeers' answer with the peers when readiness is
// peer-relative. It records whether the check passed on the override.
func (o *peerOverride) judge(b maintenance.PeerBudget, failed string) error {
	var err error
	overridden := false
	if failed != "" {
		var peers peerViews
		if o.peers != nil && o.relative() {
			peers = o.peers
		}
		overridden, err = judgeAgainstPeers(b, failed, peers)
	}
	o.record(b, overridden)
	return err
}

// record notes whether the check of budget b passed on the override, and
// sets the gauge to whether any check did.
func (o *peerOverride) record(b maintenance.PeerBudget, overridden bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.overridden[b] = overridden
	if o.gauge == nil {
		return
	}
	value := 0.0
	for _, on := range o.overridden {
		if on {
			value = 1
		}
	}
	o.gauge.Set(value)
}

// judgeAgainstPeers is the answer of a check whose budget b does not
// hold, failed saying so. peers, nil unless readiness is peer-relative,
// decide (maintenance.JudgePeers): the check fails when b holds for a
// live peer, and passes with a warning, overridden, when it holds for
// none.
func judgeAgainstPeers(b maintenance.PeerBudget, failed string, peers peerViews) (overridden bool, err error) {
	if peers == nil {
		return false, errors.New(failed)
	}
	views, fresh := peers()
	verdict, why := maintenance.JudgePeers(views, fresh, b)
	if verdict == maintenance.PeerFail {
		return false, errors.New(failed + "; " + why)
	}
	return true, gate.Warn(failed + "; " + why)
}
