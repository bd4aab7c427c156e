// Package traffic is the vocabulary of real fan-out traffic as the rest of
// probegate judges it: the Outcome of one backend's part in a round and
// the Reason its request erred, as the error counter labels it (the
// fan-out's MissingReason is the coarser word clients read). The fan-out
// writes outcomes; the pool counts them, and passive health and outlier
// detection judge backends by them. It is plain data, with no behaviour beyond names.
package traffic

// Reason says why a backend's request in a fan-out round erred, as the
// error counter labels it.
type Reason uint8

// The reasons a backend's request erred.
const (
	Timeout Reason = iota
	Transport
	HTTP4xx
	HTTP429
	HTTP5xx
	InvalidBody
	TooLarge
	// HTTP3xx is a redirect (never followed) or another status that is
	// neither 2xx nor an error: not the merge format either.
	HTTP3xx
	// Local is a fault on probegate's side, not the backend's: a round
	// refused because too many were in flight, a client that went away,
	// probegate out of descriptors or memory. It never feeds passive
	// health.
	Local
	// Straggler is a backend the round stopped waiting for because its
	// peers had answered long before (fanout.stragglers): slower than
	// its peers in this round, which is no failure. Passive health never
	// sees it; outlier detection judges its latency by the time it was
	// given.
	Straggler
	// NumReasons is the number of reasons, for arrays indexed by them.
	NumReasons
)

var reasonNames = [NumReasons]string{"timeout", "transport", "http_4xx", "http_429", "http_5xx", "invalid_body", "too_large", "http_3xx", "local", "straggler"}

// String is the reason as its metric label value names it.
func (r Reason) String() string { return reasonNames[r] }

// Reasons lists every reason in a stable order, for pre-initialised series.
func Reasons() []Reason {
	rs := make([]Reason, NumReasons)
	for i := range rs {
		rs[i] = Reason(i)
	}
	return rs
}

// Outcome is what one backend's part of a fan-out round came to, as the
// traffic stats and passive health count it. A request the client
// cancelled has no outcome: it says nothing about the backend.
type Outcome struct {
	// Erred is set when the backend did not contribute, for Reason.
	Erred  bool
	Reason Reason
	// Failed is the passive-health verdict: a transport error, a timeout,
	// 429 or a 5xx other than 501. Any other answer is a success, even one
	// that did not contribute.
	Failed bool
	// Correlated is a failure in a round where every backend asked
	// failed: the request's fault, or an outage the probes judge. It is
	// counted as an error and judges nobody.
	Correlated bool
}
