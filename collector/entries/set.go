package entries

import (
	"cmp"
	"slices"
	"time"
)

// Set is the maintenance entries in force, one per backend, those of
// backends no pool has now included. Its zero value is empty. It is not
// safe for concurrent use: its owner's lock guards it.
type Set struct {
	byName map[string]Entry
	// keeper measures the ttls of the entries.
	keeper Keeper
}

// Replace makes entries the set's entries, their ttls measured by k,
// replacing every entry it had and dropping those not in force at now,
// and returns the backends whose entry is gone, which must leave
// maintenance.
func (s *Set) Replace(entries []Entry, k Keeper, now time.Time) (gone []string) {
	s.keeper = k
	next := make(map[string]Entry, len(entries))
	for _, m := range entries {
		if m.InForce(now, k) {
			next[m.Backend] = m
		}
	}
	for name := range s.byName {
		if _, kept := next[name]; !kept {
			gone = append(gone, name)
		}
	}
	s.byName = next
	return gone
}

// Expire removes the entries no longer in force at now and returns their
// backends.
func (s *Set) Expire(now time.Time) (expired []string) {
	for name, m := range s.byName {
		if !m.InForce(now, s.keeper) {
			delete(s.byName, name)
			expired = append(expired, name)
		}
	}
	return expired
}

// Get is the named backend's entry, if it has one.
func (s *Set) Get(backend string) (Entry, bool) {
	m, ok := s.byName[backend]
	return m, ok
}

// Len is the number of entries.
func (s *Set) Len() int { return len(s.byName) }

// Sorted returns every entry, sorted by backend. The slice is the
// caller's.
func (s *Set) Sorted() []Entry {
	out := make([]Entry, 0, len(s.byName))
	for _, m := range s.byName {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Backend, b.Backend) })
	return out
}

// NextEnd is the earliest End of the entries that a clock ends, the next
// expiry; zero when none does.
func (s *Set) NextEnd() time.Time {
	var next time.Time
	for _, m := range s.byName {
		if end, ends := m.End(s.keeper); ends && (next.IsZero() || end.Before(next)) {
			next = end
		}
	}
	return next
}
