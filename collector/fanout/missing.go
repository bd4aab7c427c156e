package fanout

import (
	"strings"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/traffic"
)

// This file says which backends are missing from a round and why, in the
// words of X-Backends-Missing and of the fan-out's JSON errors: why a
// backend was not asked (its state), or why its answer did not
// contribute.

// maxMissingHeaderBytes bounds X-Backends-Missing. A pool of thousands of
// backends all missing must not make a header that proxies and clients
// refuse; X-Backends still says how many are missing.
const maxMissingHeaderBytes = 4 << 10

// missingBackend is one backend that did not contribute to a round.
type missingBackend struct {
	name   string
	reason string
	// status is the HTTP status it answered, 0 for none.
	status int
}

// missingBackends lists the backends of a round that did not contribute:
// those asked in the order asked, then those skipped.
func missingBackends(answers []backendAnswer, skipped []*pool.Backend) []missingBackend {
	var out []missingBackend
	for _, a := range answers {
		if !a.contributed {
			out = append(out, missingBackend{name: a.backend.Name, reason: answerMissingReason(a.outcome.Reason), status: a.status})
		}
	}
	for _, b := range skipped {
		out = append(out, missingBackend{name: b.Name, reason: skippedMissingReason(b.Health().State)})
	}
	return out
}

// answerMissingReason is why an asked backend did not contribute. The
// words are coarser than the error counter's reasons: a client reading
// the header needs to know whether the backend refused the query (4xx),
// broke (5xx) or sent something unmergeable, not which status exactly.
func answerMissingReason(r traffic.Reason) string {
	switch r {
	case traffic.Timeout:
		return "timeout"
	case traffic.Transport:
		return "transport"
	case traffic.HTTP4xx, traffic.HTTP429:
		return "http_4xx"
	case traffic.HTTP5xx:
		return "http_5xx"
	case traffic.TooLarge:
		return "too_large"
	case traffic.InvalidBody, traffic.HTTP3xx:
		return "bad_format"
	case traffic.Straggler:
		return "straggler"
	default:
		return "local"
	}
}

// skippedMissingReason is why a backend in state s was not asked.
func skippedMissingReason(s health.State) string {
	switch s {
	case health.StateMaintenance:
		return "maintenance"
	case health.StateEjected:
		return "ejected"
	default:
		return "unhealthy"
	}
}

// missingHeader is the X-Backends-Missing value: "name=reason, …" in the
// order of missing, cut after the last entry that fits in
// maxMissingHeaderBytes. Backend names and reasons are header-safe by
// construction (configuration validation and the fixed reasons).
func missingHeader(missing []missingBackend) string {
	var b strings.Builder
	for _, m := range missing {
		size := len(m.name) + 1 + len(m.reason)
		if b.Len() > 0 {
			size += 2
		}
		if b.Len()+size > maxMissingHeaderBytes {
			break
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(m.name)
		b.WriteByte('=')
		b.WriteString(m.reason)
	}
	return b.String()
}

// missingResults are the missing backends as a JSON error lists them.
func missingResults(missing []missingBackend) []fanoutBackendResult {
	out := make([]fanoutBackendResult, len(missing))
	for i, m := range missing {
		out[i] = fanoutBackendResult{Backend: m.name, Reason: m.reason, Status: m.status}
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
		case skippedMissingReason(health.StateMaintenance):
		case answerMissingReason(traffic.Straggler):
			cut = true
		default:
			return false, false
		}
	}
	return len(missing) > 0, cut
}
