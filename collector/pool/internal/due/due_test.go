package due

import (
	"math"
	"testing"
	"time"
)

var epoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// TestZeroIsNeverDue: a due time never set is not reached, however late.
func TestZeroIsNeverDue(t *testing.T) {
	var d Time
	if d.Reached(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Error("an unset due time is reached")
	}
	if _, ok := Earliest(&d); ok {
		t.Error("Earliest found a due time in unset ones")
	}
}

// TestReachedAtAndAfter: a due time is reached at its instant and after,
// not a nanosecond before, and Set of the zero time unsets it.
func TestReachedAtAndAfter(t *testing.T) {
	var d Time
	d.Set(epoch)
	if d.Reached(epoch.Add(-time.Nanosecond)) {
		t.Error("reached a nanosecond early")
	}
	if !d.Reached(epoch) || !d.Reached(epoch.Add(time.Hour)) {
		t.Error("not reached at or after the due time")
	}
	d.Set(time.Time{})
	if d.Reached(epoch.Add(time.Hour)) {
		t.Error("reached after Set(zero time)")
	}
}

// TestLowerOnlyMovesEarlier: Lower sets an unset due time and moves a set
// one earlier, never later, and says when it moved it.
func TestLowerOnlyMovesEarlier(t *testing.T) {
	var d Time
	if !d.Lower(epoch.Add(time.Hour)) {
		t.Error("Lower did not set an unset due time")
	}
	if d.Lower(epoch.Add(2 * time.Hour)) {
		t.Error("Lower moved the due time later")
	}
	if !d.Reached(epoch.Add(90 * time.Minute)) {
		t.Error("the later Lower changed the due time")
	}
	if !d.Lower(epoch) || !d.Reached(epoch) {
		t.Error("Lower did not move the due time earlier")
	}
}

// TestMarkDueOnlyWhenSet: MarkDue makes a set due time due at once and
// leaves an unset one unset.
func TestMarkDueOnlyWhenSet(t *testing.T) {
	var d Time
	if d.MarkDue() || d.Reached(epoch) {
		t.Error("MarkDue set an unset due time")
	}
	d.Set(epoch.Add(time.Hour))
	if !d.MarkDue() || !d.Reached(epoch) {
		t.Error("MarkDue did not make a set due time due now")
	}
}

// TestEarliestOfSet: Earliest is the smallest of the set due times and
// skips unset ones.
func TestEarliestOfSet(t *testing.T) {
	var a, b, c Time
	a.Set(epoch.Add(time.Hour))
	c.Set(epoch)
	got, ok := Earliest(&a, &b, &c)
	if !ok || !got.Equal(epoch) {
		t.Errorf("Earliest = %v, %v, want %v, true", got, ok, epoch)
	}
}

// TestFarTimesSaturate: a time past what Unix nanoseconds hold (year 9999)
// is due at the largest count, not wrapped into the past, and a time
// before 1970 is due at once without reading as unset.
func TestFarTimesSaturate(t *testing.T) {
	if got := nanos(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)); got != math.MaxInt64 {
		t.Errorf("nanos(year 9999) = %d, want MaxInt64", got)
	}
	if got := nanos(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)); got != 1 {
		t.Errorf("nanos(year 1) = %d, want 1", got)
	}
	var d Time
	d.Set(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC))
	if d.Reached(epoch) {
		t.Error("a due time in year 9999 is reached in 2026")
	}
}
