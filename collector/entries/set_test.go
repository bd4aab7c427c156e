package entries

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

var epoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// TestInForceByTheClockUntilItsEnd: kept by the clock, an entry is in
// force until its Until, not a nanosecond after, and one without an
// Until always is.
func TestInForceByTheClockUntilItsEnd(t *testing.T) {
	m := Entry{Backend: "a", Until: epoch}
	if !m.InForce(epoch.Add(-time.Nanosecond), KeptByClock) {
		t.Error("out of force before its until")
	}
	if m.InForce(epoch, KeptByClock) {
		t.Error("in force at its until")
	}
	if !(Entry{Backend: "a"}).InForce(epoch.AddDate(100, 0, 0), KeptByClock) {
		t.Error("an entry without until ended")
	}
}

// TestStoreKeptEntryIgnoresEveryClock: an entry whose ttl a shared store
// measures is in force while the store holds it and out once it ended,
// whatever a clock here reads, and a clock never ends it.
func TestStoreKeptEntryIgnoresEveryClock(t *testing.T) {
	m := Entry{Backend: "a", Until: epoch}
	for _, now := range []time.Time{epoch.AddDate(-1, 0, 0), epoch, epoch.AddDate(1, 0, 0)} {
		if !m.InForce(now, KeptByStore) || m.InForce(now, EndedByStore) || (Entry{Backend: "b"}).InForce(now, EndedByStore) {
			t.Errorf("at %v the store's word was overruled by the clock", now)
		}
	}
	if _, ends := m.End(KeptByStore); ends {
		t.Error("a store-kept entry has an end by the clock")
	}
}

// TestEntryHoldsNoStoreBookkeeping: an entry is what an operator asked
// for; the lease a store measures its ttl with is the store's, kept in
// its own document, so an entry neither carries nor accepts one.
func TestEntryHoldsNoStoreBookkeeping(t *testing.T) {
	data, err := json.Marshal(Entry{Backend: "a", Reason: "x", Since: epoch, Until: epoch.Add(time.Hour), By: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "lease") {
		t.Errorf("an entry encodes a lease: %s", data)
	}
	dec := json.NewDecoder(strings.NewReader(`{"backend":"a","lease":7}`))
	dec.DisallowUnknownFields()
	var m Entry
	if err := dec.Decode(&m); err == nil {
		t.Error("an entry accepts a lease")
	}
}

// TestReplaceReportsGoneAndDropsEnded: Replace reports the backends whose
// entry the new entries no longer hold, keeps the rest with their new
// values, and drops a new entry already out of force.
func TestReplaceReportsGoneAndDropsEnded(t *testing.T) {
	var s Set
	if gone := s.Replace([]Entry{{Backend: "a"}, {Backend: "b"}}, KeptByClock, epoch); len(gone) != 0 {
		t.Errorf("first Replace reports gone %v", gone)
	}
	gone := s.Replace([]Entry{{Backend: "b", Reason: "new"}, {Backend: "c", Until: epoch}}, KeptByClock, epoch)
	if !slices.Equal(gone, []string{"a"}) {
		t.Errorf("gone = %v, want [a]", gone)
	}
	if m, ok := s.Get("b"); !ok || m.Reason != "new" {
		t.Errorf("b = %+v, %v, want the new entry", m, ok)
	}
	if _, ok := s.Get("c"); ok || s.Len() != 1 {
		t.Errorf("an entry ended on arrival is kept (len %d)", s.Len())
	}
}

// TestExpireRemovesOnlyEnded: Expire removes and reports the entries
// whose Until has come, and NextEnd then moves to the next one.
func TestExpireRemovesOnlyEnded(t *testing.T) {
	var s Set
	s.Replace([]Entry{{Backend: "a", Until: epoch.Add(time.Minute)}, {Backend: "b", Until: epoch.Add(time.Hour)}, {Backend: "c"}}, KeptByClock, epoch)
	if got := s.NextEnd(); !got.Equal(epoch.Add(time.Minute)) {
		t.Errorf("NextEnd = %v, want a's until", got)
	}
	if got := s.Expire(epoch.Add(time.Minute)); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Expire = %v, want [a]", got)
	}
	if got := s.NextEnd(); !got.Equal(epoch.Add(time.Hour)) {
		t.Errorf("NextEnd after expiry = %v, want b's until", got)
	}
	s.Expire(epoch.Add(time.Hour))
	if got := s.NextEnd(); !got.IsZero() || s.Len() != 1 {
		t.Errorf("NextEnd with only an open-ended entry = %v (len %d), want zero", got, s.Len())
	}
}

// TestSortedByBackend: Sorted lists every entry in backend order.
func TestSortedByBackend(t *testing.T) {
	var s Set
	s.Replace([]Entry{{Backend: "c"}, {Backend: "a"}, {Backend: "b"}}, KeptByClock, epoch)
	var names []string
	for _, m := range s.Sorted() {
		names = append(names, m.Backend)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("Sorted = %v", names)
	}
}

// TestStoreKeptSetNeverExpiresByClock: entries a shared store keeps
// are ended by the store, so no clock reading, however late, expires
// them here, and none is the next expiry.
func TestStoreKeptSetNeverExpiresByClock(t *testing.T) {
	var s Set
	s.Replace([]Entry{{Backend: "a", Until: epoch}, {Backend: "b", Until: epoch.Add(time.Hour)}}, KeptByStore, epoch.AddDate(1, 0, 0))
	if s.Len() != 2 {
		t.Errorf("Replace at a late clock kept %d entries, want both", s.Len())
	}
	if got := s.Expire(epoch.AddDate(1, 0, 0)); len(got) != 0 {
		t.Errorf("Expire = %v, want nothing", got)
	}
	if got := s.NextEnd(); !got.IsZero() {
		t.Errorf("NextEnd = %v, want zero", got)
	}
}
