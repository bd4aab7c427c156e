package health

import "time"

// Class is the one class a probe result has (docs/design.md, "Probe classes").
type Class uint8

// The classes of a probe result.
const (
	// ClassOK is HTTP 200-399.
	ClassOK Class = iota
	// ClassRefused is HTTP 400-499 except 429, and 501: evidence about the
	// probe path, not about the backend.
	ClassRefused
	// ClassFailed is 429, 5xx except 501, a timeout or a transport error.
	ClassFailed
	// NumClasses is the number of classes, for arrays indexed by Class.
	NumClasses
)

var classNames = [NumClasses]string{"ok", "refused", "failed"}

func (c Class) String() string { return classNames[c] }

// Classes lists every class in a stable order, for label pre-initialisation.
func Classes() []Class { return []Class{ClassOK, ClassRefused, ClassFailed} }

// Reason says why a failed result failed. ReasonNone for ok and refused results.
type Reason uint8

// The reasons of a failed result.
const (
	ReasonNone Reason = iota
	ReasonHTTP5xx
	ReasonHTTP429
	ReasonTimeout
	ReasonTransport
	// ReasonBodyMismatch is an ok HTTP status whose body does not match
	// the expected regexp.
	ReasonBodyMismatch
	// ReasonGRPCNotServing is a gRPC health check answered with a status
	// other than SERVING.
	ReasonGRPCNotServing
	// ReasonLocal is a probe that failed for a reason of probegate's own
	// (LocalCause): it is counted, and judges no backend.
	ReasonLocal
	// NumReasons is the number of reasons, for arrays indexed by Reason.
	NumReasons
)

var reasonNames = [NumReasons]string{"", "http_5xx", "http_429", "timeout", "transport", "body_mismatch", "grpc_not_serving", "local"}

func (r Reason) String() string { return reasonNames[r] }

// FailureReasons lists the reasons a failed result can have, in a stable
// order, so every probegate_probe_failures_total series can exist at 0.
func FailureReasons() []Reason {
	return []Reason{ReasonTimeout, ReasonTransport, ReasonHTTP5xx, ReasonHTTP429, ReasonBodyMismatch, ReasonGRPCNotServing, ReasonLocal}
}

// Result is the outcome of one probe.
type Result struct {
	Class  Class
	Reason Reason
	// StatusCode is the HTTP status, 0 when the probe got no HTTP answer
	// and for the kinds that do not speak HTTP.
	StatusCode int
	// Status is the answer of a probe kind without an HTTP status, in the
	// kind's own words: "connected" for tcp, the gRPC health status or
	// code ("SERVING", "NOT_SERVING", "UNIMPLEMENTED", ...) for grpc.
	// Empty for HTTP and for results nobody answered.
	Status string
	// Time is when the probe started; Duration how long it took.
	Time     time.Time
	Duration time.Duration
	// Err describes a timeout or transport error; empty otherwise.
	Err string
	// Cause is the error behind a transport failure, when the probe had
	// one, so that where the result is recorded a fault of probegate's
	// own (LocalCause) can be told from the backend's. It is dropped
	// there: nothing keeps it.
	Cause error
	// TLSCertExpiry is the earliest NotAfter of the certificate chain the
	// backend presented, zero when the probe saw no TLS handshake's
	// result (a plaintext probe, or one that failed before it).
	TLSCertExpiry time.Time
}

// Answered reports whether the backend answered the probe: the result
// carries an HTTP status, or the Status of another kind. Timeouts and
// transport errors are unanswered.
func (r Result) Answered() bool { return r.StatusCode != 0 || r.Status != "" }

// ClassifyStatus maps an HTTP status code to its class and reason.
func ClassifyStatus(code int) (Class, Reason) {
	switch {
	case code >= 200 && code <= 399:
		return ClassOK, ReasonNone
	case code == 429:
		return ClassFailed, ReasonHTTP429
	case code == 501:
		return ClassRefused, ReasonNone
	case code >= 400 && code <= 499:
		return ClassRefused, ReasonNone
	case code >= 500 && code <= 599:
		return ClassFailed, ReasonHTTP5xx
	default:
		// 1xx never reaches us as a final answer and anything else is not
		// HTTP: treat it as a malformed response.
		return ClassFailed, ReasonTransport
	}
}

// StatusResult is the result of a probe answered with an HTTP status code.
func StatusResult(code int) Result {
	class, reason := ClassifyStatus(code)
	if reason == ReasonTransport {
		return Result{Class: class, Reason: reason, Err: "invalid HTTP status"}
	}
	return Result{Class: class, Reason: reason, StatusCode: code}
}

// TimeoutResult is the result of a probe that ran out of time.
func TimeoutResult(err string) Result {
	return Result{Class: ClassFailed, Reason: ReasonTimeout, Err: err}
}

// TransportResult is the result of a probe that failed below HTTP.
func TransportResult(err string) Result {
	return Result{Class: ClassFailed, Reason: ReasonTransport, Err: err}
}

// TransportError is the result of a probe that failed below HTTP with
// err, described as prefix followed by err. It keeps err as the Cause.
func TransportError(prefix string, err error) Result {
	return Result{Class: ClassFailed, Reason: ReasonTransport, Err: prefix + err.Error(), Cause: err}
}

// LocalResult is r as a failure of probegate's own, when its Cause is
// one (LocalCause), and reports the cause; otherwise r unchanged. The
// Cause is dropped either way.
func LocalResult(r Result) (Result, string, bool) {
	cause, local := LocalCause(r.Cause)
	r.Cause = nil
	if local {
		r.Class, r.Reason = ClassFailed, ReasonLocal
	}
	return r, cause, local
}
