package debugprobe

import (
	"crypto/tls"
	"net/http/httptrace"
	"slices"
	"sync"
	"time"
)

// trace records when the phases of one HTTP probe began and ended,
// from net/http/httptrace's hooks. The hooks may run on the transport's
// goroutines (a dial it starts for the request, say), hence the mutex.
type trace struct {
	now func() time.Time

	mu                      sync.Mutex
	start                   time.Time
	dnsStart, dnsDone       time.Time
	connectStart, connected time.Time
	tlsStart, tlsDone       time.Time
	gotConn, firstByte      time.Time
	reused                  bool
	remoteAddr              string
	dialErr, tlsErr         error
	events                  []traceEvent
	// credentials are the values of the sensitive headers the client
	// wrote, for the redactor: never shown.
	credentials []string
}

// traceEvent is one thing that happened during the probe, for the text
// format's log lines.
type traceEvent struct {
	at      time.Time
	msg     string
	keyvals []any
}

func newTrace(now func() time.Time) *trace {
	return &trace{now: now, start: now()}
}

// note records an event at now. The caller holds t.mu.
func (t *trace) note(at time.Time, msg string, keyvals ...any) {
	t.events = append(t.events, traceEvent{at: at, msg: msg, keyvals: keyvals})
}

// clientTrace is the httptrace hooks that fill t.
func (t *trace) clientTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart: func(info httptrace.DNSStartInfo) {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.dnsStart = t.now()
			t.note(t.dnsStart, "Resolving target address", "host", info.Host)
		},
		DNSDone: func(info httptrace.DNSDoneInfo) {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.dnsDone = t.now()
			if info.Err != nil {
				t.note(t.dnsDone, "Resolution failed", "err", info.Err)
				return
			}
			addrs := make([]string, len(info.Addrs))
			for i, a := range info.Addrs {
				addrs[i] = a.String()
			}
			t.note(t.dnsDone, "Resolved target address", "addrs", addrs)
		},
		ConnectStart: func(network, addr string) {
			t.mu.Lock()
			defer t.mu.Unlock()
			// Dialing several addresses in parallel (happy eyeballs), the
			// phase runs from the first start to the connection that won.
			now := t.now()
			if t.connectStart.IsZero() {
				t.connectStart = now
			}
			t.note(now, "Connecting", "network", network, "addr", addr)
		},
		ConnectDone: func(network, addr string, err error) {
			t.mu.Lock()
			defer t.mu.Unlock()
			now := t.now()
			if err != nil {
				t.dialErr = err
				t.note(now, "Connect failed", "addr", addr, "err", err)
				return
			}
			t.connected = now
			t.note(now, "Connected", "addr", addr)
		},
		TLSHandshakeStart: func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.tlsStart = t.now()
			t.note(t.tlsStart, "Starting the TLS handshake")
		},
		TLSHandshakeDone: func(state tls.ConnectionState, err error) {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.tlsDone = t.now()
			if err != nil {
				t.tlsErr = err
				t.note(t.tlsDone, "TLS handshake failed", "err", err)
				return
			}
			t.note(t.tlsDone, "TLS handshake done", "version", tls.VersionName(state.Version), "cipher_suite", tls.CipherSuiteName(state.CipherSuite))
		},
		GotConn: func(info httptrace.GotConnInfo) {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.gotConn = t.now()
			t.reused = info.Reused
			if info.Conn != nil {
				t.remoteAddr = info.Conn.RemoteAddr().String()
			}
			t.note(t.gotConn, "Got a connection", "reused", info.Reused, "remote_addr", t.remoteAddr)
		},
		WroteHeaderField: func(key string, values []string) {
			if !sensitiveHeader(key) {
				return
			}
			t.mu.Lock()
			defer t.mu.Unlock()
			t.credentials = append(t.credentials, values...)
		},
		GotFirstResponseByte: func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.firstByte = t.now()
			t.note(t.firstByte, "Received the first byte of the answer")
		},
	}
}

// sentCredentials are the values of the sensitive headers the client
// wrote during the probe.
func (t *trace) sentCredentials() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.credentials)
}

// timings are the phases of a probe in seconds. A phase the probe did
// not go through (no DNS for an IP address, no dial on a kept-alive
// connection, no TLS in plaintext) is absent.
type timings struct {
	DNS       *float64 `json:"dns_seconds,omitempty"`
	Connect   *float64 `json:"connect_seconds,omitempty"`
	TLS       *float64 `json:"tls_seconds,omitempty"`
	FirstByte *float64 `json:"first_byte_seconds,omitempty"`
	Total     float64  `json:"total_seconds"`
}

// timings are the phases t saw: the DNS, connect and TLS phases' own
// durations, and the first byte's time since the probe began, as curl's
// time_starttransfer.
func (t *trace) timings(total time.Duration) timings {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := timings{Total: total.Seconds()}
	d.DNS = phase(t.dnsStart, t.dnsDone)
	d.Connect = phase(t.connectStart, t.connected)
	d.TLS = phase(t.tlsStart, t.tlsDone)
	d.FirstByte = phase(t.start, t.firstByte)
	return d
}

// phase is the seconds from start to end, nil unless both happened.
func phase(start, end time.Time) *float64 {
	if start.IsZero() || end.IsZero() {
		return nil
	}
	s := end.Sub(start).Seconds()
	return &s
}
