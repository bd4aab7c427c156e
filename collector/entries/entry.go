// Package entries is the maintenance entries themselves: Entry, what holds
// one backend out of service while an operator works on it, and Set, the
// entries in force by backend with the rule of their expiry. It is plain
// data over a clock given as a parameter, so that every side of
// maintenance shares it without importing another: the stores persist
// entries, the manager grants them, the CLI prints them and the pool
// applies them.
package entries

import "time"

// Entry is one backend's maintenance entry.
type Entry struct {
	// Backend is the name of the backend. An entry outlives a reload that
	// removes its backend, and applies again when the backend returns.
	Backend string `json:"backend"`
	// Reason says why, as the operator gave it.
	Reason string `json:"reason"`
	// Since is when the backend entered maintenance.
	Since time.Time `json:"since"`
	// Until is when the maintenance ends by itself; zero when it lasts
	// until it is ended.
	Until time.Time `json:"until,omitzero"`
	// By is who asked: the authenticated user or the client's address.
	By string `json:"by"`
	// Lease is the id of the store's lease that measures the entry's
	// ttl (etcd), 0 when the entry has none. An entry with a lease ends
	// when its store says so, never by a replica's clock: its Until is
	// then for people only, as the granting replica saw it.
	Lease int64 `json:"lease,omitempty"`
}

// Equal reports whether m and o are the same entry: their times compared
// as instants (time.Time's == also compares the location and the
// monotonic reading, which a stored entry read back does not keep).
func (m Entry) Equal(o Entry) bool {
	return m.Backend == o.Backend && m.Reason == o.Reason && m.Since.Equal(o.Since) && m.Until.Equal(o.Until) &&
		m.By == o.By && m.Lease == o.Lease
}

// Expired reports whether the entry's ttl has run out at now by the clock
// of the one replica that owns it (the file store). An entry bound to a
// store's lease never expires by a clock here: its end comes from the
// store.
func (m Entry) Expired(now time.Time) bool {
	return m.Lease == 0 && !m.Until.IsZero() && !now.Before(m.Until)
}

// InForce is the set of the backends that entries hold out of service at
// now: those of the entries not expired.
func InForce(entries []Entry, now time.Time) map[string]bool {
	out := make(map[string]bool, len(entries))
	for _, m := range entries {
		if !m.Expired(now) {
			out[m.Backend] = true
		}
	}
	return out
}
