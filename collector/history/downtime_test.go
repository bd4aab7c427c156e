package history

import (
	"testing"
	"time"
)

// TestDowntimeAddsTheStretchesOutOfService: each stretch out of service
// adds to the total when it closes, the open one counts up to now, and a
// clock that stepped back shortens nothing.
func TestDowntimeAddsTheStretchesOutOfService(t *testing.T) {
	var d Downtime
	at := func(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }
	d.Note(false, true, at(0)) // in service at 0
	d.Note(true, false, at(10))
	if got := d.At(at(15)); got != 5*time.Second {
		t.Errorf("5s into the first stretch: %v", got)
	}
	d.Note(false, true, at(15))
	d.Note(true, true, at(20)) // a change within service
	d.Note(true, false, at(75))
	if got := d.At(at(80)); got != 10*time.Second || !d.Since.Equal(at(75)) {
		t.Errorf("5s into the second stretch: %v since %v, want 10s since 75s", got, d.Since)
	}
	d.Note(false, true, at(70)) // the clock stepped back 5s
	if d.Total != 5*time.Second || !d.DownSince.IsZero() || d.At(at(100)) != 5*time.Second {
		t.Errorf("after a stretch closed before it opened: %+v", d)
	}
}
