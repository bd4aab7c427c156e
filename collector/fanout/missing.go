package fanout

import (
	"strings"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/traffic"
)

// This file says which backends are missing from a round and why, in the
// one vocabulary every reader uses: X-Backends-Missing, the fan-out's JSON
// errors, /healthz's last round and the status page. A backend is missing
// either because it was not asked (its state) or because its answer did
// not contribute.

// maxMissingHeaderBytes bounds X-Backends-Missing and X-Backends-Served-By.
// A pool of thousands of backends all missing must not make a header that
// proxies and clients refuse; X-Backends still says how many are missing.
const maxMissingHeaderBytes = 4 << 10

// MissingReason says why a backend is missing from a round. Its words
// are coarser than the error counter's reasons (traffic.Reason): a client
// reading them needs to know whether the backend was out of service,
// refused the query (4xx), broke (5xx) or sent something unmergeable, not
// which status exactly.
type MissingReason uint8

// The reasons a backend is missing from a round. NotMissing, the zero
// value, is a backend that contributed.
const (
	NotMissing MissingReason = iota
	// MissingUnhealthy, MissingMaintenance and MissingEjected are
	// backends out of service, not asked at all.
	MissingUnhealthy
	MissingMaintenance
	MissingEjected
	MissingTimeout
	MissingTransport
	MissingHTTP4xx
	MissingHTTP5xx
	MissingTooLarge
	// MissingBadFormat is an answer the merge format cannot read: an
	// invalid body, or a redirect or other status that is not an error.
	MissingBadFormat
	// MissingLocal is a fault on probegate's side, not the backend's.
	MissingLocal
	// MissingStraggler is a backend the round stopped waiting for.
	MissingStraggler
	numMissingReasons
)

var missingReasonNames = [numMissingReasons]string{"", "unhealthy", "maintenance", "ejected",
	"timeout", "transport", "http_4xx", "http_5xx", "too_large", "bad_format", "local", "straggler"}

// String is the reason's word on the wire.
func (r MissingReason) String() string { return missingReasonNames[r] }

// Skipped reports whether a backend missing for r was not asked.
func (r MissingReason) Skipped() bool {
	return r == MissingUnhealthy || r == MissingMaintenance || r == MissingEjected
}

// missingAnswer is why an asked backend whose error counter says r did
// not contribute.
func missingAnswer(r traffic.Reason) MissingReason {
	switch r {
	case traffic.Timeout:
		return MissingTimeout
	case traffic.Transport:
		return MissingTransport
	case traffic.HTTP4xx, traffic.HTTP429:
		return MissingHTTP4xx
	case traffic.HTTP5xx:
		return MissingHTTP5xx
	case traffic.TooLarge:
		return MissingTooLarge
	case traffic.InvalidBody, traffic.HTTP3xx:
		return MissingBadFormat
	case traffic.Straggler:
		return MissingStraggler
	default:
		return MissingLocal
	}
}

// missingSkipped is why a backend served as s was not asked. A passive
// ejection is unhealthy here, as everywhere it is shown.
func missingSkipped(s health.Served) MissingReason {
	switch s.Overlay {
	case health.OverlayMaintenance:
		return MissingMaintenance
	case health.OverlayOutlierEjection:
		return MissingEjected
	default:
		return MissingUnhealthy
	}
}

// missingBackend is one replica group that did not contribute to a round;
// without groups, each backend is a group of its own, named after it.
type missingBackend struct {
	name   string
	reason MissingReason
	// status is the HTTP status its last replica asked answered, 0 for
	// none.
	status int
}

// missingBackends lists the groups of a round that did not contribute:
// those asked in group order, then those with no replica to ask.
func missingBackends(rd *round) []missingBackend {
	var out []missingBackend
	for i := range rd.groups {
		g := &rd.groups[i]
		switch {
		case !g.asked() || g.winner >= 0:
		case g.cut:
			out = append(out, missingBackend{name: g.name, reason: MissingStraggler})
		case g.last >= 0:
			a := rd.attempts[g.last].answer
			out = append(out, missingBackend{name: g.name, reason: missingAnswer(a.outcome.Reason), status: a.status})
		default:
			out = append(out, missingBackend{name: g.name, reason: MissingLocal})
		}
	}
	for i := range rd.groups {
		if g := &rd.groups[i]; !g.asked() {
			out = append(out, missingBackend{name: g.name, reason: missingGroupSkipped(g.skipped)})
		}
	}
	return out
}

// missingGroupSkipped is why a group none of whose replicas was asked is
// missing: the reason of its first replica not in maintenance, so that a
// group is missing by design only when all its replicas are.
func missingGroupSkipped(replicas []*pool.Backend) MissingReason {
	reason := MissingMaintenance
	for _, b := range replicas {
		if reason = missingSkipped(b.Served()); reason != MissingMaintenance {
			return reason
		}
	}
	return reason
}

// missingHeader is the X-Backends-Missing value: "name=reason, …" in the
// order of missing, cut after the last entry that fits in
// maxMissingHeaderBytes. Backend and group names and reasons are header-safe
// by construction (configuration validation and the fixed reasons).
func missingHeader(missing []missingBackend) string {
	return listHeader(len(missing), func(i int) (string, string) { return missing[i].name, missing[i].reason.String() })
}

// listHeader is a header value listing n entries "name=value, …", cut
// after the last entry that fits in maxMissingHeaderBytes.
func listHeader(n int, entry func(i int) (name, value string)) string {
	var b strings.Builder
	for i := range n {
		name, value := entry(i)
		size := len(name) + 1 + len(value)
		if b.Len() > 0 {
			size += 2
		}
		if b.Len()+size > maxMissingHeaderBytes {
			break
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(value)
	}
	return b.String()
}

// missingResults are the missing backends as a JSON error lists them.
func missingResults(missing []missingBackend) []fanoutBackendResult {
	out := make([]fanoutBackendResult, len(missing))
	for i, m := range missing {
		out[i] = fanoutBackendResult{Backend: m.name, Reason: m.reason.String(), Status: m.status}
	}
	return out
}

// missingByDesign reports whether every missing backend of a partial
// round is missing by design: an operator took it out for maintenance, or
// the round cut it as a straggler. Alerts leave such rounds alone. cut
// says whether any was a straggler cut, so that the two causes are
// counted apart.
func missingByDesign(missing []missingBackend) (planned, cut bool) {
	for _, m := range missing {
		switch m.reason {
		case MissingMaintenance:
		case MissingStraggler:
			cut = true
		default:
			return false, false
		}
	}
	return len(missing) > 0, cut
}

// servedByHeader is the X-Backends-Served-By value: "group=replica, …",
// the replica whose answer each group contributed, in group order, cut
// after the last entry that fits in maxMissingHeaderBytes.
func servedByHeader(rd *round) string {
	served := make([]int, 0, len(rd.groups))
	for i := range rd.groups {
		if rd.groups[i].winner >= 0 {
			served = append(served, i)
		}
	}
	return listHeader(len(served), func(i int) (string, string) {
		g := &rd.groups[served[i]]
		return g.name, g.replicas[rd.attempts[g.winner].replica].Name
	})
}
