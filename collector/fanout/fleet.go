package fanout

import (
	"sync/atomic"
)

// Fleet recognises the backend URLs that lead to a probegate of this
// pool: one of this replica's own listeners (its Self) or one of its
// peers' (the Selves they published). A target at a peer's listener is a
// loop too: a round there comes back through the peer as a round of its
// own, and each replica alone would see only its own listeners, so that
// the one whose listener it is would drop the target while the others
// took it for a healthy backend, and the replicas would disagree on the
// pool. Judged by the same Fleet, every replica drops it alike.
//
// It is safe for concurrent use; SetPeers swaps the peers while
// discovery reads them.
type Fleet struct {
	self  *Self
	peers atomic.Pointer[[]*Self]
}

// NewFleet is the fleet of self alone, until SetPeers.
func NewFleet(self *Self) *Fleet {
	return &Fleet{self: self}
}

// SetPeers replaces the peers' Selves.
func (f *Fleet) SetPeers(peers []*Self) {
	f.peers.Store(&peers)
}

// Targets reports whether a request to rawURL, or to any path under it,
// reaches a listener of this replica or of one of its peers.
func (f *Fleet) Targets(rawURL string) bool {
	if f.self.Targets(rawURL) {
		return true
	}
	if peers := f.peers.Load(); peers != nil {
		for _, p := range *peers {
			if p.Targets(rawURL) {
				return true
			}
		}
	}
	return false
}
