// Package debugprobe serves the debug probe of a backend: one probe sent
// now, on an operator's request, with the very probe the prober builds,
// and answered in full (the phases' timings, the connection, the answer's
// head and the start of its body) with every secret of the backend hidden.
// It changes no state: the result feeds neither the state machine nor a
// metric. It is blackbox_exporter's /probe?debug=true for one backend.
package debugprobe

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/probe"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/jsonanswer"
	"github.com/probegate/probegate/internal/redact"
)

// Pattern is the ServeMux pattern of the debug probe of one backend.
const Pattern = "/api/v1/backends/{name}/probe"

// period is how often one backend may be debugged.
const period = time.Second

// bodyBytes is how much of the answer's body a debug probe shows.
const bodyBytes = 1 << 10

// Options are what the debug probe reads.
type Options struct {
	Pool *pool.Pool
	// Now is the clock of the rate limit; nil is time.Now.
	Now func() time.Time
}

// Handler serves GET Pattern: it probes the named backend once, now,
// through the backend's own client and classification, and answers what
// happened: the class, reason, status and error, the timings of the DNS,
// connect and TLS phases, the first byte and the whole, the answer's head
// with credentials and sessions hidden, and the first KiB of its body. It
// changes no state: the result feeds neither the state machine nor a
// metric. A backend is debugged at most once a second (429 with
// Retry-After otherwise). ?format=text answers as blackbox_exporter's
// /probe?debug=true does. A cross-site browser request gets 403 (see
// crossSite). Mount it behind the admin API's guard.
func Handler(o Options) http.Handler {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	limiter := newLimiter(period)
	crossOrigin := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			jsonanswer.WriteError(w, r, http.StatusMethodNotAllowed, "use GET")
			return
		}
		if err := crossSite(crossOrigin, r); err != nil {
			jsonanswer.WriteError(w, r, http.StatusForbidden, err.Error())
			return
		}
		format := r.URL.Query().Get("format")
		if format != "" && format != "json" && format != "text" {
			jsonanswer.WriteError(w, r, http.StatusBadRequest, fmt.Sprintf("format=%q: want json (the default) or text", format))
			return
		}
		name := r.PathValue("name")
		b := findBackend(o.Pool, name)
		if b == nil {
			jsonanswer.WriteError(w, r, http.StatusNotFound, fmt.Sprintf("no backend is named %q", name))
			return
		}
		if ok, wait := limiter.allow(name, now()); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
			jsonanswer.WriteError(w, r, http.StatusTooManyRequests, fmt.Sprintf("backend %q was debugged less than %s ago; retry in %s", name, period, wait.Round(time.Millisecond)))
			return
		}
		rep := probeOnce(r.Context(), b)
		if format == "text" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(rep.text()))
			return
		}
		jsonanswer.Write(w, r, http.StatusOK, rep)
	})
}

// crossSite refuses, as net/http's CrossOriginProtection refuses an
// unsafe request, a debug probe a browser sends for a page of another
// site: the Sec-Fetch-Site or Origin header says so, and a request that
// carries neither (curl, probegate's own client) passes. A debug probe is
// a GET, which CrossOriginProtection lets through as a safe method, but
// it is not safe: it sends a request to the backend, so an image on any
// page a browser on the admin listener's host visits could probe the
// backends. So it is checked as if it were a POST.
func crossSite(crossOrigin *http.CrossOriginProtection, r *http.Request) error {
	asUnsafe := r.WithContext(r.Context())
	asUnsafe.Method = http.MethodPost
	return crossOrigin.Check(asUnsafe)
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

// report is the answer of a debug probe.
type report struct {
	Backend      string `json:"backend"`
	Kind         string `json:"kind"`
	URL          string `json:"url"`
	ProbeEnabled bool   `json:"probe_enabled"`
	// ProbePath is the path an HTTP probe asks for.
	ProbePath string `json:"probe_path,omitempty"`
	// ConnectionPath is the connection an HTTP probe takes: "own" (a
	// connection it owns) or "transport" (net/http's Transport), and
	// TransportSetting the http_client_config setting that needs the
	// Transport. A debug probe dials a connection of its own either way.
	ConnectionPath   string    `json:"connection_path,omitempty"`
	TransportSetting string    `json:"transport_setting,omitempty"`
	Time             time.Time `json:"time"`
	Class            string    `json:"class"`
	Reason           string    `json:"reason"`
	// Status is the HTTP status, 0 without one; Answer is the answer of
	// a kind without HTTP status (connected, SERVING, ...).
	Status     int         `json:"status"`
	Answer     string      `json:"answer,omitempty"`
	Error      string      `json:"error"`
	Timings    timings     `json:"timings"`
	Connection *connection `json:"connection,omitempty"`
	Request    *request    `json:"request,omitempty"`
	Response   *response   `json:"response,omitempty"`

	// The text format's sections besides the above.
	events     []traceEvent
	probe      config.HealthProbe
	duration   time.Duration
	certExpiry time.Time
	redact     redactor
}

type connection struct {
	Reused              bool       `json:"reused"`
	RemoteAddr          string     `json:"remote_addr,omitempty"`
	TLSVersion          string     `json:"tls_version,omitempty"`
	TLSCipherSuite      string     `json:"tls_cipher_suite,omitempty"`
	TLSCertExpiry       *time.Time `json:"tls_cert_expiry,omitempty"`
	TLSPeerCertificates []cert     `json:"tls_peer_certificates,omitempty"`
}

type cert struct {
	Subject  string    `json:"subject"`
	Issuer   string    `json:"issuer"`
	NotAfter time.Time `json:"not_after"`
}

type request struct {
	Method string              `json:"method"`
	URL    string              `json:"url"`
	Header map[string][]string `json:"header"`
}

type response struct {
	Proto         string              `json:"proto"`
	Status        string              `json:"status"`
	Header        map[string][]string `json:"header"`
	Body          string              `json:"body"`
	BodyBytesRead int                 `json:"body_bytes_read"`
	BodyTruncated bool                `json:"body_truncated"`
}

// probeOnce probes b once within its probe timeout and reports it.
func probeOnce(ctx context.Context, b *pool.Backend) *report {
	rep := &report{
		Backend: b.Name, Kind: b.Probe.EffectiveKind(), ProbeEnabled: b.Probe.Enabled,
		Time: time.Now(), probe: b.Probe, redact: newRedactor(b, nil),
	}
	rep.ConnectionPath, rep.TransportSetting = probe.HTTPConnection(b)
	if rep.ConnectionPath != "" {
		rep.ProbePath = rep.redact.text(b.Probe.Path)
	}
	rep.URL = rep.redact.text(redact.URL(b.URL + b.Probe.Path))
	tr := newTrace(time.Now)
	begin := []any{"kind", rep.Kind, "url", rep.URL, "timeout_seconds", time.Duration(b.Probe.Timeout).Seconds()}
	if rep.ConnectionPath != "" {
		begin = append(begin, "connection_path", rep.ConnectionPath)
	}
	if rep.TransportSetting != "" {
		begin = append(begin, "transport_setting", rep.TransportSetting)
	}
	tr.note(tr.start, "Beginning probe", begin...)

	seen := probe.Inspect(ctx, b, tr.clientTrace())
	rep.duration = time.Since(tr.start)
	// The client may have sent credentials no configuration holds (an
	// OAuth2 token): whatever it wrote is hidden too.
	rep.redact = newRedactor(b, tr.sentCredentials())
	// A failure of probegate's own shows as the prober counts it: local.
	r, _, _ := health.LocalResult(seen.Result)
	if req := seen.Request; req != nil {
		rep.Request = &request{Method: req.Method, URL: rep.URL, Header: rep.redact.header(req.Header)}
		if req.Host != "" {
			rep.Request.Header["Host"] = []string{rep.redact.text(req.Host)}
		}
	}
	if resp := seen.Response; resp != nil {
		tr.mu.Lock()
		tr.note(time.Now(), "Received HTTP response", "status_code", resp.StatusCode, "proto", resp.Proto, "body_bytes_read", len(seen.Body))
		tr.mu.Unlock()
	}

	rep.Class, rep.Reason, rep.Status, rep.Answer = r.Class.String(), r.Reason.String(), r.StatusCode, r.Status
	rep.Error = rep.redact.text(r.Err)
	rep.Timings = tr.timings(rep.duration)
	rep.certExpiry = r.TLSCertExpiry
	rep.addAnswer(seen, tr)
	// A refusal is a result, not a failure: the answer says the probe
	// path is wrong, not that the backend is.
	verdict, level := "Probe failed", "error"
	switch r.Class {
	case health.ClassOK:
		verdict, level = "Probe succeeded", "info"
	case health.ClassRefused:
		verdict, level = "Probe refused", "info"
	}
	tr.mu.Lock()
	tr.note(time.Now(), verdict, "level", level, "class", rep.Class, "reason", rep.Reason, "status", r.StatusCode, "err", rep.Error, "duration_seconds", rep.duration.Seconds())
	rep.events = tr.events
	tr.mu.Unlock()
	return rep
}

// addAnswer fills the connection and response of the report from what
// the probe saw, with every secret hidden.
func (rep *report) addAnswer(seen probe.Inspection, tr *trace) {
	tr.mu.Lock()
	if !tr.gotConn.IsZero() {
		rep.Connection = &connection{Reused: tr.reused, RemoteAddr: tr.remoteAddr}
	}
	tr.mu.Unlock()
	resp := seen.Response
	if resp == nil {
		return
	}
	if rep.Connection != nil && resp.TLS != nil {
		rep.addTLS(resp.TLS)
	}
	// Secrets are hidden in the whole body before it is cut, so that a
	// secret across the cut cannot show its first half.
	body := rep.redact.text(string(seen.Body))
	truncated := len(body) > bodyBytes
	if truncated {
		body = body[:bodyBytes]
	}
	rep.Response = &response{
		Proto: resp.Proto, Status: resp.Status, Header: rep.redact.header(resp.Header),
		Body: strings.ToValidUTF8(body, "\uFFFD"), BodyBytesRead: len(seen.Body), BodyTruncated: truncated,
	}
}

// addTLS adds what the TLS handshake established to the connection.
func (rep *report) addTLS(state *tls.ConnectionState) {
	c := rep.Connection
	c.TLSVersion = tls.VersionName(state.Version)
	c.TLSCipherSuite = tls.CipherSuiteName(state.CipherSuite)
	// The probe's result carries the earliest expiry of the chain.
	if expiry := rep.certExpiry; !expiry.IsZero() {
		c.TLSCertExpiry = &expiry
	}
	for _, pc := range state.PeerCertificates {
		c.TLSPeerCertificates = append(c.TLSPeerCertificates, cert{
			Subject: pc.Subject.String(), Issuer: pc.Issuer.String(), NotAfter: pc.NotAfter,
		})
	}
}
