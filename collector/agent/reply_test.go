package agent

import (
	"testing"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
)

// TestReplyFor: every served state gives the reply HAProxy acts on as the
// pool serves the backend, the overlays before the machine's state.
func TestReplyFor(t *testing.T) {
	failed := &health.Result{Class: health.ClassFailed, Reason: health.ReasonHTTP5xx, StatusCode: 503}
	timedOut := &health.Result{Class: health.ClassFailed, Reason: health.ReasonTimeout}
	ok := &health.Result{Class: health.ClassOK, StatusCode: 200}
	refused := &health.Result{Class: health.ClassRefused, StatusCode: 404}
	for _, c := range []struct {
		name    string
		backend pool.BackendSnapshot
		want    Reply
	}{
		{"healthy", pool.BackendSnapshot{Served: health.Served{Machine: health.StateHealthy}, LastProbe: ok},
			Reply{VerdictUp, "up ready\n"}},
		{"probe_unsupported is in service", pool.BackendSnapshot{Served: health.Served{Machine: health.StateProbeUnsupported}, LastProbe: refused},
			Reply{VerdictUp, "up ready\n"}},
		{"not yet probed gets no reply: HAProxy keeps what it had", pool.BackendSnapshot{ProbeEnabled: true, Served: health.Served{Machine: health.StateUnknown}},
			Reply{VerdictUnjudged, ""}},
		{"not probed at all is in service, as the pool serves it", pool.BackendSnapshot{Served: health.Served{Machine: health.StateUnknown}},
			Reply{VerdictUp, "up ready\n"}},
		{"unhealthy, last probe failed", pool.BackendSnapshot{Served: health.Served{Machine: health.StateUnhealthy}, LastProbe: failed},
			Reply{VerdictDown, "down ready #unhealthy: http_5xx\n"}},
		{"unhealthy, last probe timed out", pool.BackendSnapshot{Served: health.Served{Machine: health.StateUnhealthy}, LastProbe: timedOut},
			Reply{VerdictDown, "down ready #unhealthy: timeout\n"}},
		{"unhealthy, recovering", pool.BackendSnapshot{Served: health.Served{Machine: health.StateUnhealthy}, LastProbe: ok},
			Reply{VerdictDown, "down ready #unhealthy\n"}},
		{"unhealthy, no probe kept", pool.BackendSnapshot{Served: health.Served{Machine: health.StateUnhealthy}},
			Reply{VerdictDown, "down ready #unhealthy\n"}},
		{"unhealthy by its vantage points: theirs is the reason, not this replica's last probe", pool.BackendSnapshot{Served: health.Served{Machine: health.StateUnhealthy}, LastProbe: failed,
			Fleet: &pool.FleetSnapshot{Shared: true, VantagePoints: []pool.VantagePointSnapshot{
				{Replica: "r2", Live: true, State: health.StateUnhealthy},
				{Replica: "r3", Live: true, State: health.StateUnhealthy, Failure: health.ReasonTimeout}}}},
			Reply{VerdictDown, "down ready #unhealthy: timeout\n"}},
		{"maintenance over a healthy machine", pool.BackendSnapshot{Served: health.Served{Machine: health.StateHealthy, Overlay: health.OverlayMaintenance},
			Maintenance: &entries.Entry{Backend: "b", Reason: "kernel"}},
			Reply{VerdictMaint, "maint\n"}},
		{"maintenance over an unhealthy machine", pool.BackendSnapshot{Served: health.Served{Machine: health.StateUnhealthy, Overlay: health.OverlayMaintenance}, LastProbe: failed},
			Reply{VerdictMaint, "maint\n"}},
		{"outlier ejection", pool.BackendSnapshot{Served: health.Served{Machine: health.StateHealthy, Overlay: health.OverlayOutlierEjection}},
			Reply{VerdictDrain, "drain\n"}},
		{"passive ejection, the machine holding it unhealthy", pool.BackendSnapshot{Served: health.Served{Machine: health.StateUnhealthy, Overlay: health.OverlayPassiveEjection}, LastProbe: ok},
			Reply{VerdictDrain, "drain\n"}},
	} {
		if got := ReplyFor(c.backend); got != c.want {
			t.Errorf("%s: ReplyFor = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestReplyLinesAreOneLine: every reply is one line of printable ASCII,
// whatever the reason, so that HAProxy reads it whole.
func TestReplyLinesAreOneLine(t *testing.T) {
	for _, state := range []health.State{health.StateUnknown, health.StateHealthy, health.StateUnhealthy, health.StateProbeUnsupported} {
		for _, overlay := range []health.Overlay{health.OverlayNone, health.OverlayMaintenance, health.OverlayOutlierEjection, health.OverlayPassiveEjection} {
			for reason := range health.NumReasons {
				last := &health.Result{Class: health.ClassFailed, Reason: reason}
				line := ReplyFor(pool.BackendSnapshot{Served: health.Served{Machine: state, Overlay: overlay}, LastProbe: last}).Line
				if len(line) == 0 || line[len(line)-1] != '\n' {
					t.Fatalf("%v %v %v: reply %q does not end its line", state, overlay, reason, line)
				}
				for _, c := range []byte(line[:len(line)-1]) {
					if c < ' ' || c > '~' {
						t.Fatalf("%v %v %v: reply %q holds byte %#x", state, overlay, reason, line, c)
					}
				}
			}
		}
	}
}
