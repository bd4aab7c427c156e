package agent

import "github.com/prometheus/client_golang/prometheus"

// The outcomes of a request that got no verdict, as the requests metric
// labels them beside the verdicts.
const (
	// outcomeUnknown is a well-formed name no backend has.
	outcomeUnknown = "unknown"
	// outcomeBadRequest is a line refused before any lookup: too long,
	// too slow, not one line, or not a name a backend may have.
	outcomeBadRequest = "bad_request"
)

// metrics are the agent listener's own series, which exist only while
// the listener is on.
type metrics struct {
	verdicts    [NumVerdicts]prometheus.Counter
	unknown     prometheus.Counter
	badRequests prometheus.Counter
}

// newMetrics registers probegate_agent_requests_total on reg, with every
// reply's series at 0 from the start.
func newMetrics(reg prometheus.Registerer) *metrics {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "probegate_agent_requests_total",
		Help: "Requests to the HAProxy agent listener, by reply: up, down, maint or drain, unjudged (a probed backend without a verdict yet; no reply), unknown (no backend has the name; no reply) and bad_request (a line too long, too slow, not one line or not a backend name; no reply).",
	}, []string{"reply"})
	reg.MustRegister(requests)
	m := &metrics{unknown: requests.WithLabelValues(outcomeUnknown), badRequests: requests.WithLabelValues(outcomeBadRequest)}
	for v := range NumVerdicts {
		m.verdicts[v] = requests.WithLabelValues(v.String())
	}
	return m
}
