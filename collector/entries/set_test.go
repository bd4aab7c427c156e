package entries

import (
	"slices"
	"testing"
	"time"
)

var epoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// TestExpiredAtUntil: an entry expires at its Until, not a nanosecond
// before, and one without an Until never does.
func TestExpiredAtUntil(t *testing.T) {
	m := Entry{Backend: "a", Until: epoch}
	if m.Expired(epoch.Add(-time.Nanosecond)) {
		t.Error("expired before its until")
	}
	if !m.Expired(epoch) {
		t.Error("not expired at its until")
	}
	if (Entry{Backend: "a"}).Expired(epoch.AddDate(100, 0, 0)) {
		t.Error("an entry without until expired")
	}
}

// TestInForceLeavesOutExpired: InForce names the backends of the entries
// not expired at now, and only those.
func TestInForceLeavesOutExpired(t *testing.T) {
	got := InForce([]Entry{{Backend: "a"}, {Backend: "b", Until: epoch}, {Backend: "c", Until: epoch.Add(time.Hour)}}, epoch)
	if !got["a"] || got["b"] || !got["c"] || len(got) != 2 {
		t.Errorf("InForce = %v, want a and c", got)
	}
}

// TestReplaceReportsGoneAndDropsExpired: Replace reports the backends whose
// entry the new entries no longer hold, keeps the rest with their new
// values, and drops a new entry already expired.
func TestReplaceReportsGoneAndDropsExpired(t *testing.T) {
	var s Set
	if gone := s.Replace([]Entry{{Backend: "a"}, {Backend: "b"}}, epoch); len(gone) != 0 {
		t.Errorf("first Replace reports gone %v", gone)
	}
	gone := s.Replace([]Entry{{Backend: "b", Reason: "new"}, {Backend: "c", Until: epoch}}, epoch)
	if !slices.Equal(gone, []string{"a"}) {
		t.Errorf("gone = %v, want [a]", gone)
	}
	if m, ok := s.Get("b"); !ok || m.Reason != "new" {
		t.Errorf("b = %+v, %v, want the new entry", m, ok)
	}
	if _, ok := s.Get("c"); ok || s.Len() != 1 {
		t.Errorf("an entry expired on arrival is kept (len %d)", s.Len())
	}
}

// TestExpireRemovesOnlyExpired: Expire removes and reports the entries
// whose Until has come, and NextUntil then moves to the next one.
func TestExpireRemovesOnlyExpired(t *testing.T) {
	var s Set
	s.Replace([]Entry{{Backend: "a", Until: epoch.Add(time.Minute)}, {Backend: "b", Until: epoch.Add(time.Hour)}, {Backend: "c"}}, epoch)
	if got := s.NextUntil(); !got.Equal(epoch.Add(time.Minute)) {
		t.Errorf("NextUntil = %v, want a's until", got)
	}
	if got := s.Expire(epoch.Add(time.Minute)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Expire = %v, want [a]", got)
	}
	if got := s.NextUntil(); !got.Equal(epoch.Add(time.Hour)) {
		t.Errorf("NextUntil after expiry = %v, want b's until", got)
	}
	s.Expire(epoch.Add(time.Hour))
	if got := s.NextUntil(); !got.IsZero() || s.Len() != 1 {
		t.Errorf("NextUntil with only an open-ended entry = %v (len %d), want zero", got, s.Len())
	}
}

// TestSortedByBackend: Sorted lists every entry in backend order.
func TestSortedByBackend(t *testing.T) {
	var s Set
	s.Replace([]Entry{{Backend: "c"}, {Backend: "a"}, {Backend: "b"}}, epoch)
	var names []string
	for _, m := range s.Sorted() {
		names = append(names, m.Backend)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("Sorted = %v", names)
	}
}

// TestLeasedEntryNeverExpiresByClock: an entry bound to a store's lease is
// ended by the store, so no clock reading, however late, expires it here,
// and it is never the next expiry.
func TestLeasedEntryNeverExpiresByClock(t *testing.T) {
	m := Entry{Backend: "a", Until: epoch, Lease: 7}
	if m.Expired(epoch.AddDate(1, 0, 0)) {
		t.Error("a leased entry expired by the clock")
	}
	var s Set
	s.Replace([]Entry{m, {Backend: "b", Until: epoch.Add(time.Hour)}}, epoch.Add(time.Minute))
	if got := s.Expire(epoch.AddDate(1, 0, 0)); !slices.Equal(got, []string{"b"}) {
		t.Errorf("Expire = %v, want only the unleased b", got)
	}
	if got := s.NextUntil(); !got.IsZero() {
		t.Errorf("NextUntil = %v with only a leased entry left, want zero", got)
	}
}
