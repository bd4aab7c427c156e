package debugprobe

import (
	"sync"
	"time"
)

// limiter lets a backend be debugged at most once per period: a debug
// probe is a real request to the backend on top of its probes, and an
// admin API that anyone can call in a loop must not turn into a load test.
// It is pure bookkeeping: the caller passes the time.
type limiter struct {
	period time.Duration

	mu sync.Mutex
	// last is when each backend was last debugged, within the last period;
	// older entries are dropped, so the map holds the backends of one
	// period at most.
	last map[string]time.Time
}

func newLimiter(period time.Duration) *limiter {
	return &limiter{period: period, last: make(map[string]time.Time)}
}

// allow reports whether backend may be debugged at now, and records it
// when it may. When not, retryAfter is how long until it may.
func (l *limiter) allow(backend string, now time.Time) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, at := range l.last {
		// An entry from the future is a clock that stepped back: it is
		// forgotten rather than blocking its backend until the clock
		// catches up.
		if since := now.Sub(at); since >= l.period || since < 0 {
			delete(l.last, name)
		}
	}
	if at, seen := l.last[backend]; seen {
		return false, l.period - now.Sub(at)
	}
	l.last[backend] = now
	return true, 0
}
