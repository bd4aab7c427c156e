package hedge

import (
	"math"
	"sync/atomic"
)

// Capacity is the most tokens a Bucket holds: the most hedges that can go
// out in a burst after a quiet spell.
const Capacity = 10

// microTokens is how many of a Bucket's units make one token: a request's
// share of a token is kept exactly for any percentage with up to four
// decimals, so that no rounding drifts over millions of requests.
const microTokens = 1_000_000

// Bucket is the fan-out's token bucket for hedges: every backend request
// earns a share of a token, a hedge spends one, and with less than one
// left there is no hedge. It starts empty, so that at every moment the
// hedges sent are at most the share of the requests sent: tokens earned
// while the bucket is full are lost, never owed. It refills by requests,
// not by time, which is why it is not golang.org/x/time/rate's limiter.
//
// It is safe for concurrent use, without a lock: every round in flight
// earns and spends from the one bucket.
type Bucket struct {
	// micro is the tokens held, in microTokens.
	micro atomic.Int64
	// earn is what one request adds, in microTokens.
	earn int64
}

// NewBucket returns an empty bucket whose requests each earn maxPercent /
// 100 of a token, so that hedges stay within maxPercent of the requests.
// A percentage outside 0 to 100 counts as the nearer end, and one that is
// not a number as 0 (no hedge ever).
func NewBucket(maxPercent float64) *Bucket {
	if math.IsNaN(maxPercent) {
		maxPercent = 0
	}
	maxPercent = min(max(maxPercent, 0), 100)
	return &Bucket{earn: int64(math.Round(maxPercent * microTokens / 100))}
}

// Request earns a backend request's share of a token, up to Capacity. The
// fan-out calls it for every request it sends to a backend: the chosen
// replicas', hedges' and failovers' alike.
func (b *Bucket) Request() {
	for {
		held := b.micro.Load()
		earned := min(held+b.earn, Capacity*microTokens)
		if earned == held || b.micro.CompareAndSwap(held, earned) {
			return
		}
	}
}

// Spend takes one token for a hedge, and reports whether there was one:
// false means no hedge.
func (b *Bucket) Spend() bool {
	for {
		held := b.micro.Load()
		if held < microTokens {
			return false
		}
		if b.micro.CompareAndSwap(held, held-microTokens) {
			return true
		}
	}
}

// Tokens is how many tokens the bucket holds now.
func (b *Bucket) Tokens() float64 {
	return float64(b.micro.Load()) / microTokens
}
