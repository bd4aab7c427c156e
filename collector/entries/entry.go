// Package entries is the maintenance entries themselves: Entry, what holds
// one backend out of service while an operator works on it, the one rule
// of when an entry is in force (Entry.InForce, by the Keeper of its ttl),
// and Set, the entries in force by backend. It is plain
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
}

// Equal reports whether m and o are the same entry: their times compared
// as instants (time.Time's == also compares the location and the
// monotonic reading, which a stored entry read back does not keep).
func (m Entry) Equal(o Entry) bool {
	return m.Backend == o.Backend && m.Reason == o.Reason && m.Since.Equal(o.Since) && m.Until.Equal(o.Until) &&
		m.By == o.By
}

// Keeper is what measures an entry's ttl, and so what ends an entry that
// has one.
type Keeper uint8

const (
	// KeptByClock: the entries are one replica's alone (the file store),
	// and its clock ends each at its Until.
	KeptByClock Keeper = iota
	// KeptByStore: a store that replicas share measures the ttl (etcd:
	// a lease, which expires on its leader's clock) and holds the entry.
	// No replica's clock ends it: its Until is for people only, as the
	// granting replica saw it.
	KeptByStore
	// EndedByStore: that store ended the entry (etcd: its lease is
	// gone), or the entry has an Until that the store does not measure
	// (written by hand). No replica's clock may end it either, so
	// nothing holds it.
	EndedByStore
)

// End is when the entry stops being in force by a clock, its ttl measured
// by k; false when no clock ends it: it lasts until it is removed, or its
// store ends it. Together with InForce it is the one rule of when an
// entry is in force, which the stores, the manager and the pool all
// follow.
func (m Entry) End(k Keeper) (time.Time, bool) {
	return m.Until, k == KeptByClock && !m.Until.IsZero()
}

// InForce reports whether the entry is in force at now, its ttl measured
// by k: until its End, when a clock ends it; while its store holds it,
// when a shared store measures it.
func (m Entry) InForce(now time.Time, k Keeper) bool {
	if k == EndedByStore {
		return false
	}
	end, ends := m.End(k)
	return !ends || now.Before(end)
}
