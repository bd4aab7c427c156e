package pool

import (
	"math"
	"time"
)

// dueNanos is t in Unix nanoseconds for a due time, saturated at the
// largest int64. time.Time.UnixNano is undefined past the year 2262, and a
// due time that wrapped negative would be past at once, for ever: the
// timer loop would spin. A due time that far off is never reached.
func dueNanos(t time.Time) int64 {
	if t.After(time.Unix(0, math.MaxInt64)) {
		return math.MaxInt64
	}
	return t.UnixNano()
}
