package collector

// FanoutReason says why a backend did not contribute to a fan-out round.
type FanoutReason uint8

// The reasons a backend did not contribute to a fan-out round.
const (
	FanoutTimeout FanoutReason = iota
	FanoutTransport
	FanoutHTTP4xx
	FanoutHTTP429
	FanoutHTTP5xx
	FanoutInvalidBody
	FanoutTooLarge
	numFanoutReasons
)

var fanoutReasonNames = [numFanoutReasons]string{"timeout", "transport", "http_4xx", "http_429", "http_5xx", "invalid_body", "too_large"}

func (r FanoutReason) String() string { return fanoutReasonNames[r] }

// FanoutReasons lists every reason in a stable order, for pre-initialised series.
func FanoutReasons() []FanoutReason {
	rs := make([]FanoutReason, numFanoutReasons)
	for i := range rs {
		rs[i] = FanoutReason(i)
	}
	return rs
}

// trafficStats is what a backend keeps about real fan-out traffic: the
// errors it caused and the passive-health window. It is guarded by the
// backend's mutex.
type trafficStats struct {
	ejections uint64
	errors    [numFanoutReasons]uint64
}

// TrafficSnapshot is a copy of a backend's traffic stats.
type TrafficSnapshot struct {
	// Ejections counts passive-health ejections.
	Ejections uint64
	// Errors counts fan-out errors by reason, indexed by FanoutReason.
	Errors [numFanoutReasons]uint64
}

func (t *trafficStats) snapshot() TrafficSnapshot {
	return TrafficSnapshot{Ejections: t.ejections, Errors: t.errors}
}
