package pool

import (
	"testing"
	"time"
)

// TestDowntimeAtCountsTheOpenStretch: a backend out of service since
// DownSince has the finished stretches plus the open one as downtime; one
// in service has only the finished ones, whatever the time.
func TestDowntimeAtCountsTheOpenStretch(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	down := BackendSnapshot{DownSince: start, Downtime: time.Minute}
	if got := down.DowntimeAt(start.Add(10 * time.Second)); got != time.Minute+10*time.Second {
		t.Errorf("down: DowntimeAt = %v, want 1m10s", got)
	}
	up := BackendSnapshot{Downtime: time.Minute}
	if got := up.DowntimeAt(start.Add(time.Hour)); got != time.Minute {
		t.Errorf("in service: DowntimeAt = %v, want 1m", got)
	}
}
