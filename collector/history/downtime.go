package history

import "time"

// Downtime is when a backend last changed state and how long it has been
// out of service in all. Its zero value is a backend that never changed
// state. It is not safe for concurrent use: the backend's mutex guards it.
type Downtime struct {
	// Since is the time of the last state change, zero before the first.
	Since time.Time
	// DownSince is when the current stretch out of service began, zero
	// while the backend is in service.
	DownSince time.Time
	// Total is the length of the finished stretches out of service.
	Total time.Duration
}

// Note records a state change at now from in service or not (wasIn) to
// in service or not (isIn): it opens or closes a stretch out of service.
func (d *Downtime) Note(wasIn, isIn bool, now time.Time) {
	d.Since = now
	switch {
	case wasIn && !isIn:
		d.DownSince = now
	case !wasIn && isIn && !d.DownSince.IsZero():
		// A clock that stepped back must not shorten the total.
		d.Total += max(now.Sub(d.DownSince), 0)
		d.DownSince = time.Time{}
	}
}

// At is the total time out of service up to now, the current stretch
// included.
func (d Downtime) At(now time.Time) time.Duration {
	total := d.Total
	if !d.DownSince.IsZero() {
		total += max(now.Sub(d.DownSince), 0)
	}
	return total
}
