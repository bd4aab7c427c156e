package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/version"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/httpclient"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// maxBodyBytes is how much of a probe response body is read. A backend
// answering with more is still classified by its status, but the rest of
// the body is never read: the connection is closed instead of drained, so
// a 1 GiB answer costs one connection, not a gigabyte of work.
const maxBodyBytes = 64 << 10

// newHTTP builds the HTTP probe of a backend: GET (or HEAD) its url and
// probe path with the configured headers, never following a redirect, and
// match the body when asked to. The probe owns its connection unless the
// backend's http_client_config needs net/http's Transport; then it goes
// through the backend's client. A probe that owns its connection keeps
// its own deadline and releases its connection.
func newHTTP(b *pool.Backend) (built, error) {
	spec, err := newHTTPProbe(b)
	if err != nil {
		return built{}, err
	}
	return spec.build()
}

// build makes the probe of spec, on the path spec.transport says.
func (spec *httpProbeSpec) build() (built, error) {
	if spec.transport != "" {
		return built{probe: func(ctx context.Context) health.Result {
			return httpProbe(ctx, spec.client, spec.req, spec.timeout, spec.body, nil)
		}}, nil
	}
	p, err := newConnProbe(spec)
	if err != nil {
		return built{}, err
	}
	return built{
		probe:   func(ctx context.Context) health.Result { return p.probe(ctx, nil) },
		timed:   p.probeBy,
		release: p.release,
	}, nil
}

// httpProbeSpec is what an HTTP probe of a backend sends and expects,
// prepared once.
type httpProbeSpec struct {
	client       *http.Client
	clientConfig config.HTTPClientConfig
	req          *http.Request
	timeout      time.Duration
	// body, when not nil, must match the body of an ok answer.
	body *regexp.Regexp
	// transport names the http_client_config setting that makes the
	// probe go through net/http's Transport (the client); "" when the
	// probe owns its connection.
	transport string
}

// newHTTPProbe prepares the HTTP probe of a backend.
func newHTTPProbe(b *pool.Backend) (*httpProbeSpec, error) {
	req, err := NewHTTPRequest(b.URL + b.Probe.Path)
	if err != nil {
		return nil, err
	}
	if b.Probe.Method != "" {
		req.Method = b.Probe.Method
	}
	// keep_alive false: a request that asks to close its connection gets
	// one of its own, closed after the answer, as HAProxy's checks do; no
	// connection is kept between probes.
	req.Close = !b.Probe.KeepsAlive()
	for name, value := range b.Probe.Headers {
		if strings.EqualFold(name, "Host") {
			// net/http sends req.Host, never a Host header.
			req.Host = value
			continue
		}
		req.Header.Set(name, value)
	}
	var body *regexp.Regexp
	if b.Probe.ExpectBodyRegexp != "" {
		if body, err = regexp.Compile(b.Probe.ExpectBodyRegexp); err != nil {
			return nil, fmt.Errorf("expect_body_regexp: %w", err)
		}
	}
	cfg := b.ClientConfig()
	return &httpProbeSpec{client: b.Client, clientConfig: cfg, req: req, timeout: time.Duration(b.Probe.Timeout), body: body,
		transport: httpclient.TransportOnly(cfg, req.URL)}, nil
}

// HTTPPath says how the HTTP probe of b reaches it: "own connection", or
// "net/http" and the http_client_config setting that needs net/http's
// Transport. It is "" for the other kinds and for a probe url that does
// not parse.
func HTTPPath(b *pool.Backend) string {
	switch connection, setting := HTTPConnection(b); connection {
	case ConnectionOwn:
		return pathOwnConnection
	case ConnectionTransport:
		return pathTransport + " (" + setting + ")"
	}
	return ""
}

// HTTPConnection says which connection the HTTP probe of b takes:
// ConnectionOwn, or ConnectionTransport and the http_client_config
// setting that needs net/http's Transport. It is "" for the other kinds
// and for a probe url that does not parse.
func HTTPConnection(b *pool.Backend) (connection, setting string) {
	if b.Probe.EffectiveKind() != config.KindHTTP {
		return "", ""
	}
	u, err := url.Parse(b.URL + b.Probe.Path)
	if err != nil {
		return "", ""
	}
	if setting := httpclient.TransportOnly(b.ClientConfig(), u); setting != "" {
		return ConnectionTransport, setting
	}
	return ConnectionOwn, ""
}

// The connections an HTTP probe takes, as HTTPConnection names them: one
// it owns, or net/http's Transport.
const (
	ConnectionOwn       = "own"
	ConnectionTransport = "transport"
)

// The paths an HTTP probe takes, as HTTPPath names them.
const (
	pathOwnConnection = "own connection"
	pathTransport     = "net/http"
)

// NewHTTPRequest builds the request template a backend's probes send. It
// is built once per backend and only ever copied, so the URL is parsed
// once instead of once per probe.
func NewHTTPRequest(rawURL string) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			// The URL error repeats the URL, credentials and all.
			err = urlErr.Err
		}
		return nil, fmt.Errorf("probe url: %w", err)
	}
	// Operators recognise probe traffic in their access logs by this, as
	// they do Prometheus scrapes; http_client_config headers override it.
	req.Header.Set("User-Agent", "probegate/"+version.Version)
	return req, nil
}

// HTTP sends the probe request template req within ctx's deadline and
// classifies the outcome: a redirect is the ok it is and never followed,
// at most maxBodyBytes of the body is read, and the whole probe, body
// included, ends by the deadline. timeout is the probe timeout, for the
// messages. The template is copied, never modified.
func HTTP(ctx context.Context, client *http.Client, req *http.Request, timeout time.Duration) health.Result {
	return httpProbe(ctx, client, req, timeout, nil, nil)
}

// httpProbe is HTTP that also matches the body of an ok answer against
// body, when not nil: a body that does not match turns the ok status into
// a failed, answered result with reason body_mismatch. A debug probe
// passes seen to keep the answer's head and the start of its body; the
// prober passes nil.
func httpProbe(ctx context.Context, client *http.Client, req *http.Request, timeout time.Duration, body *regexp.Regexp, seen *seenAnswer) health.Result {
	// The client's transport directly: a probe never follows a redirect
	// whatever the client's CheckRedirect says, and skips the header
	// copies http.Client makes in case it does.
	transport := client.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	// The Transport bounds the bytes of the heads
	// (httpclient.MaxResponseHeaderBytes) but not their lines: the
	// answer's are counted here, once it parsed them. A head with too
	// many lines leaves the connection unfit, as on the owned
	// connection, so it is closed: the Transport may have put it back
	// among its idle ones already. (A Got1xxResponse hook could count
	// the lines of the 1xx heads too, but the Transport then resets its
	// bound on the bytes after each of them.)
	answered := &answeredOn{}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: answered.gotConn})
	resp, err := transport.RoundTrip(req.WithContext(ctx))
	if err != nil {
		return errorResult(ctx, "", err, timeout)
	}
	if httpclient.HeaderLines(resp.Header) > httpclient.MaxResponseHeaderLines {
		answered.closeConn()
		resp.Body.Close()
		return errorResult(ctx, "", httpclient.ErrResponseHeaderLines, timeout)
	}
	if seen != nil {
		seen.head = resp
	}
	r := readAnswer(ctx, resp, timeout, body, seen)
	r.TLSCertExpiry = certExpiry(resp.TLS)
	return r
}

// answeredOn keeps the connection an answer through net/http's
// Transport came on.
type answeredOn struct {
	mu   sync.Mutex
	conn net.Conn
}

func (a *answeredOn) gotConn(info httptrace.GotConnInfo) {
	a.mu.Lock()
	a.conn = info.Conn
	a.mu.Unlock()
}

// closeConn closes the connection the answer came on. A fan-out request
// that took it from the idle pool meanwhile fails, on a backend that
// sent a hostile head.
func (a *answeredOn) closeConn() {
	a.mu.Lock()
	conn := a.conn
	a.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// readAnswer reads at most maxBodyBytes of an answer's body within ctx's
// deadline and classifies the answer; seen, when not nil, keeps the start
// of the body.
func readAnswer(ctx context.Context, resp *http.Response, timeout time.Duration, body *regexp.Regexp, seen *seenAnswer) health.Result {
	// net/http bounds reading an ordinary body by the request's context,
	// but hands back the connection itself as the body of a 101 Switching
	// Protocols, with no deadline at all: closing the body when the probe
	// times out is what keeps a backend from stalling its probe forever.
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stop()
	// A body that ends within the limit is read to its end, which lets the
	// transport keep the connection for the next probe. A longer one is
	// abandoned: closing an unfinished body closes the connection.
	limited := io.LimitReader(resp.Body, maxBodyBytes)
	var content []byte
	var err error
	if body != nil || seen != nil {
		content, err = io.ReadAll(limited)
	} else {
		_, err = io.Copy(io.Discard, limited)
	}
	resp.Body.Close()
	if seen != nil {
		seen.keepBody(content)
	}
	if err != nil {
		return errorResult(ctx, fmt.Sprintf("reading the body after status %d: ", resp.StatusCode), err, timeout)
	}
	r := health.StatusResult(resp.StatusCode)
	if body != nil && r.Class == health.ClassOK && !body.Match(content) {
		return bodyMismatchResult(resp.StatusCode)
	}
	return r
}

// bodyMismatchResult is the result of an HTTP probe answered with the ok
// status code whose body did not match the expected regexp: failed, and
// answered, so it latches like a 5xx.
func bodyMismatchResult(code int) health.Result {
	return health.Result{Class: health.ClassFailed, Reason: health.ReasonBodyMismatch, StatusCode: code,
		Err: "the body does not match expect_body_regexp"}
}

// httpAnswers are the answers simulatedHTTP takes.
const httpAnswers = "a status code (100-599), body_mismatch, timeout or error"

// simulatedHTTP is the result of an HTTP probe answered as `probegate
// simulate` names it.
func simulatedHTTP(answer string) (health.Result, bool) {
	switch answer {
	case "timeout":
		return health.TimeoutResult("simulated timeout"), true
	case "error":
		return health.TransportResult("simulated transport error"), true
	case "body_mismatch":
		return bodyMismatchResult(http.StatusOK), true
	}
	code, err := strconv.Atoi(answer)
	if err != nil || code < 100 || code > 599 {
		return health.Result{}, false
	}
	return health.StatusResult(code), true
}

// errorResult classifies a failed request or body read. The probe's own
// deadline is what makes a timeout, whatever error the transport chose to
// report it with; anything else is a transport failure.
func errorResult(ctx context.Context, prefix string, err error, timeout time.Duration) health.Result {
	deadline, _ := ctx.Deadline()
	return classifyError(deadline, ctx.Err(), prefix, err, timeout)
}

// classifyError is errorResult for a probe whose deadline (zero for none)
// and context's error are given apart.
func classifyError(deadline time.Time, ctxErr error, prefix string, err error, timeout time.Duration) health.Result {
	// The *url.Error wrapper repeats the method and URL, which the
	// backend's log lines and /healthz already show (redacted).
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	var netErr interface{ Timeout() bool }
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return health.TimeoutResult(fmt.Sprintf("%sno answer within the probe timeout of %s", prefix, timeout))
	case errors.Is(ctxErr, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) ||
		(!deadline.IsZero() && !time.Now().Before(deadline)):
		// The body closed at the deadline, a connection deadline that
		// fired a moment before the context's, or any error at or after
		// the deadline (a status line cut short by it is not a malformed
		// one): the same timeout.
		return health.TimeoutResult(fmt.Sprintf("%sno answer within the probe timeout of %s: %v", prefix, timeout, err))
	}
	return health.TransportError(prefix, err)
}
