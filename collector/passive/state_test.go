package passive

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

var stateEpoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func threeFailures() config.PassiveHealth {
	return config.PassiveHealth{Enabled: true, Window: model.Duration(time.Minute), MaxFailures: 3}
}

// TestStateRecordCallsForEjection: the third failure of max_failures 3
// calls for an ejection, not the second.
func TestStateRecordCallsForEjection(t *testing.T) {
	var s State
	failed := traffic.Outcome{Reason: traffic.Timeout, Erred: true, Failed: true}
	for i := range 2 {
		if s.Record(stateEpoch, failed, threeFailures()) {
			t.Fatalf("failure %d calls for an ejection", i+1)
		}
	}
	if !s.Record(stateEpoch, failed, threeFailures()) {
		t.Error("the third failure does not call for an ejection")
	}
}

// TestStateRecordSkipsWhatSaysNothing: local outcomes, failures the whole
// round shared, and everything while passive health is off leave the
// window empty.
func TestStateRecordSkipsWhatSaysNothing(t *testing.T) {
	var s State
	off := threeFailures()
	off.Enabled = false
	for range 5 {
		s.Record(stateEpoch, traffic.Outcome{Reason: traffic.Local, Erred: true, Failed: true}, threeFailures())
		s.Record(stateEpoch, traffic.Outcome{Reason: traffic.Timeout, Failed: true, Correlated: true}, threeFailures())
		s.Record(stateEpoch, traffic.Outcome{Reason: traffic.Timeout, Failed: true}, off)
	}
	if c := s.Counts(stateEpoch, time.Minute); c.Requests() != 0 {
		t.Errorf("window holds %+v, want nothing", c)
	}
}

// TestStateEjectEmptiesTheWindow: an ejection returns the counts that
// caused it, is counted, starts the window afresh and sets when the
// elapsed window readmits.
func TestStateEjectEmptiesTheWindow(t *testing.T) {
	var s State
	failed := traffic.Outcome{Reason: traffic.Timeout, Failed: true}
	for range 3 {
		s.Record(stateEpoch, failed, threeFailures())
	}
	if c := s.Eject(stateEpoch, time.Minute); c.Failures != 3 {
		t.Errorf("Eject returned %+v, want 3 failures", c)
	}
	if c := s.Counts(stateEpoch, time.Minute); c.Requests() != 0 {
		t.Errorf("window after ejection holds %+v", c)
	}
	if s.Ejections() != 1 {
		t.Errorf("Ejections = %d, want 1", s.Ejections())
	}
	if got := s.ReadmitAt(time.Minute); !got.Equal(stateEpoch.Add(time.Minute)) {
		t.Errorf("ReadmitAt = %v, want a window after the ejection", got)
	}
}

// TestEjectable: only a backend in service, not ejected and not in
// maintenance may be ejected.
func TestEjectable(t *testing.T) {
	healthy := health.Health{State: health.StateHealthy}
	if !Ejectable(healthy, false) {
		t.Error("a healthy backend is not ejectable")
	}
	if Ejectable(healthy, true) {
		t.Error("a backend in maintenance is ejectable")
	}
	if Ejectable(healthy.Eject(), false) {
		t.Error("an ejected backend is ejectable again")
	}
	if Ejectable(health.Health{State: health.StateUnhealthy}, false) {
		t.Error("an unhealthy backend is ejectable")
	}
}
