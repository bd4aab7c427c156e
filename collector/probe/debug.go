package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"time"

	"github.com/probegate/probegate/collector/admin"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// DebugPattern is the ServeMux pattern of the debug probe of one backend.
const DebugPattern = "/api/v1/backends/{name}/probe"

// debugPeriod is how often one backend may be debugged.
const debugPeriod = time.Second

// debugBodyBytes is how much of the answer's body a debug probe shows.
const debugBodyBytes = 1 << 10

// DebugOptions are what the debug probe reads.
type DebugOptions struct {
	Pool *pool.Pool
	// Now is the clock of the rate limit; nil is time.Now.
	Now func() time.Time
}

// DebugHandler serves GET DebugPattern: it probes the named backend once,
// now, through the backend's own client and classification, and answers
// what happened: the class, reason, status and error, the timings of the
// DNS, connect and TLS phases, the first byte and the whole, the answer's
// head with credentials and sessions hidden, and the first KiB of its
// body. It changes no state: the result feeds neither the state machine
// nor a metric. A backend is debugged at most once a second (429 with
// Retry-After otherwise). ?format=text answers as blackbox_exporter's
// /probe?debug=true does. Mount it behind the admin API's guard.
func DebugHandler(o DebugOptions) http.Handler {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	limiter := newDebugLimiter(debugPeriod)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			admin.WriteError(w, http.StatusMethodNotAllowed, "use GET")
			return
		}
		format := r.URL.Query().Get("format")
		if format != "" && format != "json" && format != "text" {
			admin.WriteError(w, http.StatusBadRequest, fmt.Sprintf("format=%q: want json (the default) or text", format))
			return
		}
		name := r.PathValue("name")
		b := findBackend(o.Pool, name)
		if b == nil {
			admin.WriteError(w, http.StatusNotFound, fmt.Sprintf("no backend is named %q", name))
			return
		}
		if ok, wait := limiter.allow(name, now()); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
			admin.WriteError(w, http.StatusTooManyRequests, fmt.Sprintf("backend %q was debugged less than %s ago; retry in %s", name, debugPeriod, wait.Round(time.Millisecond)))
			return
		}
		report := debugProbe(r.Context(), b)
		if format == "text" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(report.text()))
			return
		}
		admin.WriteJSON(w, http.StatusOK, report)
	})
}

// findBackend is the pool's backend of that name, nil when it has none.
func findBackend(p *pool.Pool, name string) *pool.Backend {
	for _, b := range p.Backends() {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// debugReport is the answer of a debug probe.
type debugReport struct {
	Backend      string    `json:"backend"`
	Kind         string    `json:"kind"`
	URL          string    `json:"url"`
	ProbeEnabled bool      `json:"probe_enabled"`
	Time         time.Time `json:"time"`
	Class        string    `json:"class"`
	Reason       string    `json:"reason"`
	// Status is the HTTP status, 0 without one; Answer is the answer of
	// a kind without HTTP status (connected, SERVING, ...).
	Status     int              `json:"status"`
	Answer     string           `json:"answer,omitempty"`
	Error      string           `json:"error"`
	Timings    debugTimings     `json:"timings"`
	Connection *debugConnection `json:"connection,omitempty"`
	Request    *debugRequest    `json:"request,omitempty"`
	Response   *debugResponse   `json:"response,omitempty"`

	// The text format's sections besides the above.
	events     []traceEvent
	probe      config.HealthProbe
	duration   time.Duration
	certExpiry time.Time
	redact     redactor
}

type debugConnection struct {
	Reused              bool        `json:"reused"`
	RemoteAddr          string      `json:"remote_addr,omitempty"`
	TLSVersion          string      `json:"tls_version,omitempty"`
	TLSCipherSuite      string      `json:"tls_cipher_suite,omitempty"`
	TLSCertExpiry       *time.Time  `json:"tls_cert_expiry,omitempty"`
	TLSPeerCertificates []debugCert `json:"tls_peer_certificates,omitempty"`
}

type debugCert struct {
	Subject  string    `json:"subject"`
	Issuer   string    `json:"issuer"`
	NotAfter time.Time `json:"not_after"`
}

type debugRequest struct {
	Method string              `json:"method"`
	URL    string              `json:"url"`
	Header map[string][]string `json:"header"`
}

type debugResponse struct {
	Proto         string              `json:"proto"`
	Status        string              `json:"status"`
	Header        map[string][]string `json:"header"`
	Body          string              `json:"body"`
	BodyBytesRead int                 `json:"body_bytes_read"`
	BodyTruncated bool                `json:"body_truncated"`
}

// seenAnswer is what a debug probe keeps of the answer: its head and as
// much of its body as the probe read.
type seenAnswer struct {
	head *http.Response
	body []byte
}

func (s *seenAnswer) keepBody(content []byte) {
	s.body = bytes.Clone(content)
}

// debugProbe probes b once within its probe timeout and reports it.
func debugProbe(ctx context.Context, b *pool.Backend) *debugReport {
	rep := &debugReport{
		Backend: b.Name, Kind: b.Probe.EffectiveKind(), ProbeEnabled: b.Probe.Enabled,
		Time: time.Now(), probe: b.Probe, redact: newRedactor(b),
	}
	rep.URL = rep.redact.text(redactURL(b.URL + b.Probe.Path))
	trace := newProbeTrace(time.Now)
	trace.note(trace.start, "Beginning probe", "kind", rep.Kind, "url", rep.URL, "timeout_seconds", time.Duration(b.Probe.Timeout).Seconds())

	var r health.Result
	var seen seenAnswer
	probeCtx, cancel := context.WithTimeout(ctx, time.Duration(b.Probe.Timeout))
	if rep.Kind == config.KindHTTP {
		r = debugHTTP(probeCtx, b, trace, &seen, rep)
	} else {
		r = debugOtherKind(probeCtx, b)
	}
	cancel()
	rep.duration = time.Since(trace.start)

	rep.Class, rep.Reason, rep.Status, rep.Answer = r.Class.String(), r.Reason.String(), r.StatusCode, r.Status
	rep.Error = rep.redact.text(r.Err)
	rep.Timings = trace.timings(rep.duration)
	rep.certExpiry = r.TLSCertExpiry
	rep.addAnswer(&seen, trace)
	verdict, level := "Probe succeeded", "info"
	if r.Class != health.ClassOK {
		verdict, level = "Probe failed", "error"
	}
	trace.mu.Lock()
	trace.note(time.Now(), verdict, "level", level, "class", rep.Class, "reason", rep.Reason, "status", r.StatusCode, "err", rep.Error, "duration_seconds", rep.duration.Seconds())
	rep.events = trace.events
	trace.mu.Unlock()
	return rep
}

// debugHTTP sends b's HTTP probe with the trace's hooks on.
func debugHTTP(ctx context.Context, b *pool.Backend, trace *probeTrace, seen *seenAnswer, rep *debugReport) health.Result {
	spec, err := newHTTPProbe(b)
	if err != nil {
		return health.TransportResult(err.Error())
	}
	rep.Request = &debugRequest{Method: spec.req.Method, URL: rep.URL, Header: rep.redact.header(spec.req.Header)}
	if spec.req.Host != "" {
		rep.Request.Header["Host"] = []string{rep.redact.text(spec.req.Host)}
	}
	ctx = httptrace.WithClientTrace(ctx, trace.clientTrace())
	r := httpProbe(ctx, spec.client, spec.req, spec.timeout, spec.body, seen)
	if seen.head != nil {
		trace.mu.Lock()
		trace.note(time.Now(), "Received HTTP response", "status_code", seen.head.StatusCode, "proto", seen.head.Proto, "body_bytes_read", len(seen.body))
		trace.mu.Unlock()
	}
	return r
}

// debugOtherKind sends the probe of a kind that does not speak HTTP, on a
// probe built for this one debug probe (a gRPC probe dials its own
// connection, closed after it).
func debugOtherKind(ctx context.Context, b *pool.Backend) health.Result {
	f, release, err := newFunc(b)
	if err != nil {
		return health.TransportResult(err.Error())
	}
	if release != nil {
		defer release()
	}
	return f(ctx)
}

// addAnswer fills the connection and response of the report from what
// the probe saw, with every secret hidden.
func (rep *debugReport) addAnswer(seen *seenAnswer, trace *probeTrace) {
	trace.mu.Lock()
	if !trace.gotConn.IsZero() {
		rep.Connection = &debugConnection{Reused: trace.reused, RemoteAddr: trace.remoteAddr}
	}
	trace.mu.Unlock()
	resp := seen.head
	if resp == nil {
		return
	}
	if rep.Connection != nil && resp.TLS != nil {
		addTLS(rep.Connection, resp.TLS)
	}
	// Secrets are hidden in the whole body before it is cut, so that a
	// secret across the cut cannot show its first half.
	body := rep.redact.text(string(seen.body))
	truncated := len(body) > debugBodyBytes
	if truncated {
		body = body[:debugBodyBytes]
	}
	rep.Response = &debugResponse{
		Proto: resp.Proto, Status: resp.Status, Header: rep.redact.header(resp.Header),
		Body: strings.ToValidUTF8(body, "\uFFFD"), BodyBytesRead: len(seen.body), BodyTruncated: truncated,
	}
}

// addTLS adds what the TLS handshake established.
func addTLS(c *debugConnection, state *tls.ConnectionState) {
	c.TLSVersion = tls.VersionName(state.Version)
	c.TLSCipherSuite = tls.CipherSuiteName(state.CipherSuite)
	if expiry := certExpiry(state); !expiry.IsZero() {
		c.TLSCertExpiry = &expiry
	}
	for _, cert := range state.PeerCertificates {
		c.TLSPeerCertificates = append(c.TLSPeerCertificates, debugCert{
			Subject: cert.Subject.String(), Issuer: cert.Issuer.String(), NotAfter: cert.NotAfter,
		})
	}
}
