package agent

import (
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
)

// Verdict is what the agent tells HAProxy to do with a backend.
type Verdict uint8

// The verdicts, one for each thing HAProxy can be told.
const (
	// VerdictUp is in service: HAProxy sends it traffic.
	VerdictUp Verdict = iota
	// VerdictDown is out of service by its probes.
	VerdictDown
	// VerdictMaint is held out by an operator's maintenance entry.
	VerdictMaint
	// VerdictDrain is ejected by outlier detection or passive health:
	// HAProxy sends it no new traffic.
	VerdictDrain
	// VerdictUnjudged is a probed backend without a verdict yet: it gets
	// no reply, which HAProxy counts as an agent failure that changes
	// nothing, so a restarted probegate lends HAProxy no verdict it has
	// not formed (a dead server HAProxy holds DOWN stays DOWN until the
	// probes say otherwise, rather than coming back UP as unknown).
	VerdictUnjudged
	// NumVerdicts is the number of verdicts, for arrays indexed by Verdict.
	NumVerdicts
)

var verdictNames = [NumVerdicts]string{"up", "down", "maint", "drain", "unjudged"}

// String is the verdict's name, as the requests metric labels it.
func (v Verdict) String() string { return verdictNames[v] }

// Reply is the agent's answer about one backend: the verdict and the
// line that says it to HAProxy, newline included; empty for no reply.
type Reply struct {
	Verdict Verdict
	Line    string
}

// The reply lines. HAProxy keeps two states of a server that an agent can
// set, the operational one (up, down) and the administrative one (ready,
// drain, maint), and a word of one kind leaves the other as an earlier
// reply left it: after "maint", a bare "down" would keep the server in
// MAINT for as long as it stays down. So the replies that take a backend
// out by its probes say "ready" as well, and "up ready" brings a server
// back from whatever an earlier reply made it. A "drain" or a "maint"
// replaces the other administrative state, which is all they need.
const (
	lineUp    = "up ready\n"
	lineDown  = "down ready #"
	lineMaint = "maint\n"
	lineDrain = "drain\n"
)

// ReplyFor is the reply about a backend: maint while a maintenance entry
// holds it out, drain while outlier detection or passive health has
// ejected it, down while its probes hold it out of service (with why, in
// words of a fixed set: the backend's name and the client's bytes are
// never echoed), none while it is probed but has no verdict yet, and up
// otherwise, probe_unsupported and a backend that is not probed included,
// as the pool serves them.
func ReplyFor(b pool.BackendSnapshot) Reply {
	switch {
	case b.Served.Overlay == health.OverlayMaintenance:
		return Reply{VerdictMaint, lineMaint}
	case b.Served.Ejected():
		return Reply{VerdictDrain, lineDrain}
	case !b.Served.InService():
		return Reply{VerdictDown, lineDown + downReason(b) + "\n"}
	case b.ProbeEnabled && b.Served.Machine == health.StateUnknown:
		return Reply{VerdictUnjudged, ""}
	}
	return Reply{VerdictUp, lineUp}
}

// downReason is the description HAProxy shows beside a server the probes
// hold out: the state, and the last probe's failure reason when it
// failed. Under a shared verdict the reason is the first vantage point's
// that says unhealthy after a failure, so that every replica gives the
// same line, whatever its own last probe was.
func downReason(b pool.BackendSnapshot) string {
	state := health.StateUnhealthy.String()
	failure := health.ReasonNone
	switch {
	case b.Fleet != nil && b.Fleet.Shared:
		for _, vp := range b.Fleet.VantagePoints {
			if vp.Live && vp.State == health.StateUnhealthy && vp.Failure != health.ReasonNone {
				failure = vp.Failure
				break
			}
		}
	case b.LastProbe != nil && b.LastProbe.Class == health.ClassFailed:
		failure = b.LastProbe.Reason
	}
	if failure == health.ReasonNone {
		return state
	}
	return state + ": " + failure.String()
}
