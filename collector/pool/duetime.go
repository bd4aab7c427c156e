package pool

import (
	"math"
	"time"
)

// dueNanos is t in Unix nanoseconds for a due time, saturated at the
// largest int64. time.Time.UnixNano is undefined past the year 2262, and a
// due time that wrapped negative would be past at once, for ever: the
// timer loop would spin. A due time that far off is never reached. A time
// before 1970 is 1, due at once: 0 means no due time at all.
func dueNanos(t time.Time) int64 {
	switch {
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	case t.UnixNano() < 1:
		return 1
	}
	return t.UnixNano()
}
