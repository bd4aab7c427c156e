package health

import (
	"slices"
	"testing"
)

// TestServedStateNames: the served states are the machine's four and the
// two overlays', with the words the metrics' state set, its transitions'
// to and the JSON answers have always used. Dashboards and alerts read
// them, so a change here is a change of the contract.
func TestServedStateNames(t *testing.T) {
	var names []string
	for _, s := range ServedStates() {
		names = append(names, s.String())
	}
	want := []string{"unknown", "healthy", "unhealthy", "probe_unsupported", "maintenance", "ejected"}
	if !slices.Equal(names, want) || len(names) != int(NumServedStates) {
		t.Errorf("served states %v (NumServedStates %d), want %v", names, NumServedStates, want)
	}
	for _, s := range States() {
		if ServedState(s).String() != s.String() {
			t.Errorf("machine state %v is served as %v", s, ServedState(s))
		}
	}
}

// TestServe: maintenance hides everything, an outlier ejection hides a
// passive one, and each is shown by the word it always had: a passive
// ejection as unhealthy, an outlier ejection as ejected. Only the
// machine's in-service states with no overlay are in service.
func TestServe(t *testing.T) {
	healthy := Health{State: StateHealthy}
	passive := Health{State: StateHealthy}.Eject()
	for _, c := range []struct {
		name                 string
		h                    Health
		maintenance, outlier bool
		overlay              Overlay
		shown                ServedState
		inService, ejected   bool
	}{
		{"healthy", healthy, false, false, OverlayNone, ServedHealthy, true, false},
		{"unknown", Health{}, false, false, OverlayNone, ServedUnknown, true, false},
		{"probe_unsupported", Health{State: StateProbeUnsupported}, false, false, OverlayNone, ServedProbeUnsupported, true, false},
		{"unhealthy", Health{State: StateUnhealthy}, false, false, OverlayNone, ServedUnhealthy, false, false},
		{"passive ejection", passive, false, false, OverlayPassiveEjection, ServedUnhealthy, false, true},
		{"outlier ejection", healthy, false, true, OverlayOutlierEjection, ServedEjected, false, true},
		{"outlier over passive", passive, false, true, OverlayOutlierEjection, ServedEjected, false, true},
		{"maintenance", healthy, true, false, OverlayMaintenance, ServedMaintenance, false, false},
		{"maintenance over both ejections", passive, true, true, OverlayMaintenance, ServedMaintenance, false, false},
	} {
		s := Serve(c.h, c.maintenance, c.outlier)
		if s.Machine != c.h.State || s.Overlay != c.overlay || s.State() != c.shown || s.InService() != c.inService || s.Ejected() != c.ejected {
			t.Errorf("%s: %+v shown %v, in service %v, ejected %v; want overlay %v, %v, %v, %v",
				c.name, s, s.State(), s.InService(), s.Ejected(), c.overlay, c.shown, c.inService, c.ejected)
		}
	}
}
