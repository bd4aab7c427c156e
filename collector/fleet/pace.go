package fleet

import "time"

// The pace of publication writes.
const (
	// MaxWritesPerSecond bounds how often a replica writes its verdicts.
	MaxWritesPerSecond = 4
	// MaxBytesPerSecond bounds how much a replica writes a second.
	MaxBytesPerSecond = 1 << 20
)

// NextWrite is when a replica may start its next publication write, with
// pending changes waiting (an Op each), its last write started at last
// (zero for none yet) and lastBytes large: at once when nothing was written
// for long enough, else after the last by 1/MaxWritesPerSecond of a
// second, or by the time MaxBytesPerSecond takes to carry the last write
// when that is longer. ok is false when nothing is pending: a replica
// writes only on change. Changes arriving meanwhile wait for the write,
// which carries each backend's latest verdict once.
func NextWrite(pending int, last time.Time, lastBytes int, now time.Time) (at time.Time, ok bool) {
	if pending == 0 {
		return time.Time{}, false
	}
	if last.IsZero() {
		return now, true
	}
	gap := max(time.Second/MaxWritesPerSecond, time.Duration(lastBytes)*time.Second/MaxBytesPerSecond)
	return later(now, last.Add(gap)), true
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
