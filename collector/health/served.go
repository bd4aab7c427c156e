package health

// The state machine decides a backend's State from its probes alone. What
// the backend is served as can be more: an operator may hold it out for
// maintenance, outlier detection may eject it for doing worse than its
// peers, and passive health may eject it for failing real traffic. Served
// is that verdict, the machine's state under its overlay, and ServedState
// the one word every reader shows for it: /healthz, /status, the metrics'
// state set and the fan-out's missing backends.

// Overlay is what holds a backend out of service over its machine's
// state, and why. The zero Overlay holds nothing.
type Overlay uint8

// The overlays, each with its cause.
const (
	// OverlayNone leaves the machine's state as it is.
	OverlayNone Overlay = iota
	// OverlayMaintenance is an operator's maintenance entry
	// (docs/design.md, "Maintenance").
	OverlayMaintenance
	// OverlayOutlierEjection is outlier detection's ejection: the backend
	// did much worse than its peers in the same fan-out rounds
	// (docs/design.md, "The fan-out as a control group").
	OverlayOutlierEjection
	// OverlayPassiveEjection is passive health's ejection: the backend
	// failed real traffic. The machine holds it as unhealthy until ok
	// probes or the elapsed window readmit it (Health.Eject).
	OverlayPassiveEjection
)

// Served is what a backend is served as: its machine's state under the
// overlay that holds it out, if any. It is a value, computed under the
// backend's lock by Serve.
type Served struct {
	// Machine is the state machine's state underneath the overlay.
	Machine State
	// Overlay is what holds the backend out over it.
	Overlay Overlay
}

// Serve is what a backend with the machine's health h is served as when
// an operator holds it in maintenance and when outlier detection's
// ejection is enforced. Maintenance comes first: an operator's word hides
// every other; an outlier ejection comes before a passive one, which is
// part of h (Health.Ejected).
func Serve(h Health, maintenance, outlierEjected bool) Served {
	s := Served{Machine: h.State}
	switch {
	case maintenance:
		s.Overlay = OverlayMaintenance
	case outlierEjected:
		s.Overlay = OverlayOutlierEjection
	case h.Ejected:
		s.Overlay = OverlayPassiveEjection
	}
	return s
}

// Ejected reports whether an ejection, by passive health or by outlier
// detection, holds the backend out.
func (s Served) Ejected() bool {
	return s.Overlay == OverlayOutlierEjection || s.Overlay == OverlayPassiveEjection
}

// State is the one word the backend is shown as. A passive ejection is
// shown as unhealthy, the machine's own state under it, and an outlier
// ejection as ejected: the metrics' state set and the JSON answers have
// always said so, and dashboards and alerts read those words.
func (s Served) State() ServedState {
	switch s.Overlay {
	case OverlayMaintenance:
		return ServedMaintenance
	case OverlayOutlierEjection:
		return ServedEjected
	case OverlayPassiveEjection:
		return ServedUnhealthy
	}
	return ServedState(s.Machine)
}

// InService reports whether the backend may receive traffic.
func (s Served) InService() bool { return s.State().InService() }

// ServedState is the word a backend is shown as: one of the machine's
// states, or maintenance, or ejected. Its values are the label values of
// the metrics' state set and of the transitions' to.
type ServedState uint8

// The served states. The machine's come first, with their State's values.
const (
	ServedUnknown          = ServedState(StateUnknown)
	ServedHealthy          = ServedState(StateHealthy)
	ServedUnhealthy        = ServedState(StateUnhealthy)
	ServedProbeUnsupported = ServedState(StateProbeUnsupported)
	ServedMaintenance      = ServedState(NumStates)
	ServedEjected          = ServedMaintenance + 1
	// NumServedStates is the number of served states, for arrays indexed
	// by ServedState.
	NumServedStates = ServedEjected + 1
)

var servedNames = [NumServedStates]string{
	ServedMaintenance: "maintenance",
	ServedEjected:     "ejected",
}

// InService reports whether a backend shown as s may receive traffic.
func (s ServedState) InService() bool {
	switch s {
	case ServedUnhealthy, ServedMaintenance, ServedEjected:
		return false
	}
	return true
}

func (s ServedState) String() string {
	if s < ServedState(NumStates) {
		return State(s).String()
	}
	return servedNames[s]
}

// ServedStates lists every served state in a stable order, for
// state-set metrics.
func ServedStates() []ServedState {
	all := make([]ServedState, 0, NumServedStates)
	for _, s := range States() {
		all = append(all, ServedState(s))
	}
	return append(all, ServedMaintenance, ServedEjected)
}
