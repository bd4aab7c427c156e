package health

// State is where a backend stands in the health state machine
// (docs/design.md, "The state machine"): its probes' verdict alone. What
// the backend is served as is Served.
type State uint8

// The states of a backend.
const (
	// StateUnknown is a backend not yet probed. It is in service.
	StateUnknown State = iota
	// StateHealthy is a backend whose probe answers ok.
	StateHealthy
	// StateUnhealthy is out of service: its probes fail.
	StateUnhealthy
	// StateProbeUnsupported is in service but not verified: the probe path
	// refuses, so there is no health signal.
	StateProbeUnsupported
	// NumStates is the number of states, for arrays indexed by State.
	NumStates
)

var stateNames = [NumStates]string{"unknown", "healthy", "unhealthy", "probe_unsupported"}

func (s State) String() string { return stateNames[s] }

// States lists every state of the machine in a stable order. What a
// backend is served as adds the pool's overlays (ServedStates).
func States() []State {
	return []State{StateUnknown, StateHealthy, StateUnhealthy, StateProbeUnsupported}
}

// Thresholds are the configured fall (Failures) and rise (Successes) counts.
type Thresholds struct {
	Failures  int
	Successes int
}

// Health is everything the state machine keeps about one backend. It is a
// value: Step returns the next one and touches nothing else, so the prober,
// `probegate simulate` and the tests share one source of truth.
type Health struct {
	State State
	// Verified is the latch: set by the first ok or answered failure, it
	// never clears. An unverified backend has never shown that its probe
	// path tells health apart.
	Verified bool
	// Unreachable is set after Failures consecutive unanswered results and
	// cleared by any HTTP answer. It is kept negated so that the zero Health
	// (not yet probed) is reachable.
	Unreachable bool
	// NotOK counts consecutive non-ok results of any class.
	NotOK int
	// Good counts consecutive results that count toward recovery.
	Good int
	// Unanswered counts consecutive results without an HTTP status.
	Unanswered int
	// Ejected is set when passive health took the backend out; until
	// readmission only ok results count toward recovery.
	Ejected bool
}

// Reachable reports whether the backend answered HTTP recently enough.
func (h Health) Reachable() bool { return !h.Unreachable }

// InService reports whether the machine lets the backend receive
// traffic. An overlay may still hold it out (Served.InService).
func (h Health) InService() bool {
	return h.State != StateUnhealthy
}

// Step feeds one probe result through the state machine. A failure of
// probegate's own (ReasonLocal) says nothing about the backend and changes
// nothing.
func (h Health) Step(r Result, t Thresholds) Health {
	if r.Reason == ReasonLocal {
		return h
	}
	if r.Answered() {
		h.Unanswered = 0
		h.Unreachable = false
	} else {
		h.Unanswered++
		if h.Unanswered >= t.Failures {
			h.Unreachable = true
		}
	}
	if r.Class == ClassOK || (r.Class == ClassFailed && r.Answered()) {
		h.Verified = true
	}
	if r.Class == ClassOK {
		h.NotOK = 0
	} else {
		h.NotOK++
	}
	countsGood := r.Class == ClassOK || (!h.Verified && !h.Ejected && r.Class == ClassRefused)
	if countsGood {
		h.Good++
	} else {
		h.Good = 0
	}

	switch {
	case h.State != StateUnhealthy:
		switch {
		case (h.Verified && h.NotOK >= t.Failures) || (!h.Verified && h.Unanswered >= t.Failures):
			h.State = StateUnhealthy
		case r.Class == ClassOK:
			h.State = StateHealthy
		case !h.Verified && r.Class == ClassRefused:
			h.State = StateProbeUnsupported
		}
	case h.Good >= t.Successes:
		h = h.readmit()
	}
	return h
}

// Eject takes the backend out of service on passive evidence (failing real
// traffic). Only ok probe results after the ejection bring it back: the end
// of the failure window is no proof of recovery.
func (h Health) Eject() Health {
	h.State = StateUnhealthy
	h.Good = 0
	h.Ejected = true
	return h
}

// AfterMaintenance is the probe-derived health of a probed backend whose
// maintenance ended: out of service until it earns readmission the way an
// unhealthy backend does, with Successes consecutive results that count
// toward recovery. Whatever it did during the maintenance is no proof that
// it is back.
func (h Health) AfterMaintenance() Health {
	h.State = StateUnhealthy
	h.Good = 0
	return h
}

// Readmit ends a passive ejection without probe evidence. It is for
// backends that are not probed, where the elapsed window is the only signal
// there is; such a backend goes back to unknown unless a probe once verified it.
func (h Health) Readmit() Health {
	if !h.Ejected {
		return h
	}
	h = h.readmit()
	if !h.Verified {
		h.State = StateUnknown
	}
	return h
}

func (h Health) readmit() Health {
	h.Ejected = false
	if h.Verified {
		h.State = StateHealthy
	} else {
		h.State = StateProbeUnsupported
	}
	return h
}
