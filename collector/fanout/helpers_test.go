package fanout

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/probe"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/syncbuffer"
	"github.com/probegate/probegate/internal/testclock"
	"github.com/probegate/probegate/internal/testconfig"
)

// enabledConfig is the shared test configuration with the fan-out enabled,
// forwarding the default headers, and the given backends.
func enabledConfig(backends ...config.Backend) *config.Config {
	cfg := testconfig.New(backends...)
	cfg.Fanout = config.Fanout{Enabled: true, ForwardHeaders: config.DefaultForwardHeaders()}
	return cfg
}

// urlBackends are backends named b0, b1, … at the given URLs.
func urlBackends(urls ...string) []config.Backend {
	backends := make([]config.Backend, len(urls))
	for i, url := range urls {
		backends[i] = config.Backend{Name: fmt.Sprintf("b%d", i), URL: url}
	}
	return backends
}

// backend is a real loopback backend. Its /healthz always answers 200 (the
// probe says ok); every other request is counted, remembered and answered
// by the test's handler.
type backend struct {
	*httptest.Server
	hits atomic.Int64

	mu   sync.Mutex
	last request
}

// request is what a backend saw of the last request.
type request struct {
	method, path, query string
	header              http.Header
	body                string
}

func serve(t *testing.T, handler http.HandlerFunc) *backend {
	t.Helper()
	b := &backend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.WriteHeader(http.StatusOK)
			return
		}
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.last = request{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery, header: r.Header.Clone(), body: string(body)}
		b.mu.Unlock()
		b.hits.Add(1)
		handler(w, r)
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *backend) lastRequest() request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// answer answers every request with a status and a body.
func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// after answers like next once done is closed, unless the request is
// cancelled first; it closes answered when it has answered. It orders the
// answers of several backends without sleeping.
func after(done <-chan struct{}, answered chan<- struct{}, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if done != nil {
			select {
			case <-done:
			case <-r.Context().Done():
				return
			}
		}
		next(w, r)
		// Out before the next backend answers, not when the handler
		// returns.
		_ = http.NewResponseController(w).Flush()
		if answered != nil {
			close(answered)
		}
	}
}

// unanswered answers nothing until the request is cancelled, or a minute
// has passed.
func unanswered(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(time.Minute):
	}
}

// gzipped compresses data.
func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// logBuffer collects log lines from concurrent writers.
type logBuffer struct {
	syncbuffer.Buffer
}

// lines are the lines containing every one of parts.
func (l *logBuffer) lines(parts ...string) []string {
	var found []string
	for line := range strings.SplitSeq(l.String(), "\n") {
		all := line != ""
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			found = append(found, line)
		}
	}
	return found
}

// count is the number of lines containing every one of parts.
func (l *logBuffer) count(parts ...string) int { return len(l.lines(parts...)) }

// epoch is where a test clock starts.
var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable clock safe for concurrent reads.
func newClock() *testclock.Clock { return testclock.New(epoch) }

// rig is a pool over real loopback backends (b0, b1, … in the order
// given), a Fanout over it, its metrics and the logs of both.
type rig struct {
	pool     *pool.Pool
	fanout   *Fanout
	metrics  *Metrics
	logs     *logBuffer
	backends []*backend
	// targets and settings are what the pool was built from, for tests
	// that reload it.
	targets  []pool.Target
	settings pool.Settings
}

// options tune a rig; the zero value is a 5s timeout, no size limits,
// json_array, passive health off, probes on with thresholds 3/2.
type options struct {
	fanout  config.Fanout
	passive config.PassiveHealth
	// unprobed names the backends whose probing is disabled.
	unprobed map[int]bool
	// urls replaces a backend's URL (a dead one, or one with a base path).
	urls      map[int]string
	successes int
	// now is the clock of the pool and the fan-out; nil is time.Now.
	now func() time.Time
	// disabled leaves fanout.enabled off.
	disabled bool
	// clientConfig, when set, is every backend's http_client_config.
	clientConfig *config.HTTPClientConfig
	// readiness is the readiness budget's settings.
	readiness config.Readiness
	// groups puts backends in replica groups.
	groups map[int]string
}

func setup(t *testing.T, o options, backends ...*backend) *rig {
	t.Helper()
	if o.fanout.Timeout == 0 {
		o.fanout.Timeout = model.Duration(5 * time.Second)
	}
	// The fan-out is off unless enabled; a test that wants it off says so.
	o.fanout.Enabled = !o.disabled
	if o.fanout.ForwardHeaders == nil {
		o.fanout.ForwardHeaders = config.DefaultForwardHeaders()
	}
	if o.successes == 0 {
		o.successes = 2
	}
	cfg := enabledConfig()
	cfg.HealthProbe.Successes = o.successes
	cfg.PassiveHealth = o.passive
	cfg.Readiness = o.readiness
	for i, b := range backends {
		bc := config.Backend{Name: fmt.Sprintf("b%d", i), URL: b.URL}
		if u, ok := o.urls[i]; ok {
			bc.URL = u
		}
		bc.HTTPClientConfig = o.clientConfig
		bc.Group = o.groups[i]
		if o.unprobed[i] {
			bc.HealthProbe = config.NewHealthProbeOverride(config.HealthProbe{Enabled: false}, "enabled")
		}
		cfg.Backends = append(cfg.Backends, bc)
	}
	logs := &logBuffer{}
	logger := log.NewLogfmtLogger(logs)
	p := pool.New(logger, o.now)
	targets, settings := discovery.Static(cfg), pool.SettingsOf(cfg)
	if err := p.Apply(targets, settings); err != nil {
		t.Fatal(err)
	}
	metrics := NewMetrics(prometheus.NewRegistry())
	f := New(p, o.fanout, metrics, logger, o.now)
	r := &rig{pool: p, fanout: f, metrics: metrics, logs: logs, backends: backends, targets: targets, settings: settings}
	t.Cleanup(r.closeIdle)
	return r
}

// closeIdle closes the pool's idle connections to the backends.
func (r *rig) closeIdle() {
	for _, b := range r.pool.Backends() {
		b.Client.CloseIdleConnections()
	}
}

// do runs one round through ServeHTTP from client address 192.0.2.7.
func (r *rig) do(method, target, body string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.RemoteAddr = "192.0.2.7:5555"
	for name, values := range header {
		req.Header[name] = values
	}
	rec := httptest.NewRecorder()
	r.fanout.ServeHTTP(rec, req)
	return rec
}

func (r *rig) backend(i int) *pool.Backend { return r.pool.Backends()[i] }

// probe sends real health probes to backend i and records them.
func (r *rig) probe(t *testing.T, i, times int) {
	t.Helper()
	b := r.backend(i)
	req, err := probe.NewHTTPRequest(b.URL + b.Probe.Path)
	if err != nil {
		t.Fatal(err)
	}
	for range times {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		res := probe.HTTP(ctx, b.Client, req, time.Second)
		cancel()
		if res.Class != health.ClassOK {
			t.Fatalf("probe of %s: %+v; want ok", b.Name, res)
		}
		b.RecordProbe(res)
	}
}

// counters are the round counters: requests, partial, failed.
func (r *rig) counters() [3]float64 {
	return [3]float64{
		testutil.ToFloat64(r.metrics.Requests),
		testutil.ToFloat64(r.metrics.Partial),
		testutil.ToFloat64(r.metrics.Failed),
	}
}

func (r *rig) errors(i int, reason traffic.Reason) uint64 {
	return r.backend(i).Snapshot().Traffic.Errors[reason]
}

// windowCounts are the outcomes in a backend's passive-health window.
type windowCounts struct{ successes, failures int }

func (c windowCounts) requests() int { return c.successes + c.failures }

// ejectionCounts reads the failures and requests an ejection log line
// gives.
var ejectionCounts = regexp.MustCompile(`\bfailures=(\d+) requests=(\d+)\b`)

// window reads backend i's passive-health window through the pool's own
// verdict on it: under a rule that ejects at the first failure once one
// outcome is in, one more failure ejects the backend, and the ejection's
// log line counts the window with that failure. The backend ends up
// ejected: read the window last. The backend must be in service and not
// ejected.
func (r *rig) window(t *testing.T, i int) windowCounts {
	t.Helper()
	s := r.settings
	s.Passive = config.PassiveHealth{
		Enabled: true, Window: s.Passive.Window, MinSuccessRatio: 1, MinRequests: 1, MaxEjectedPercent: 100,
	}
	if s.Passive.Window == 0 {
		s.Passive.Window = model.Duration(time.Minute)
	}
	// A budget that allows every backend out, so that the readiness
	// floor never suppresses the ejection that reads the window.
	everyone, err := config.ParseIntOrPercent("100%")
	if err != nil {
		t.Fatal(err)
	}
	s.Readiness = config.Readiness{MaxUnavailable: &everyone}
	// The same targets keep their backends, and the same window their
	// outcomes.
	if err := r.pool.Apply(r.targets, s); err != nil {
		t.Fatal(err)
	}
	b := r.backend(i)
	msg := []string{`msg="Backend ejected by passive health"`, "backend=" + b.Name + " "}
	before := r.logs.count(msg...)
	r.pool.RecordRound([]pool.RoundSample{{Backend: b, Outcome: traffic.Outcome{Failed: true}}})
	lines := r.logs.lines(msg...)
	if len(lines) != before+1 {
		t.Fatalf("reading the window of %s: one more failure did not eject it (%+v):\n%s", b.Name, b.Health(), r.logs)
	}
	m := ejectionCounts.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("ejection log line without counts: %s", lines[len(lines)-1])
	}
	failures, _ := strconv.Atoi(m[1])
	requests, _ := strconv.Atoi(m[2])
	// Without the failure added to read it.
	return windowCounts{successes: requests - failures, failures: failures - 1}
}

// feed records the same probe result n times on a backend.
func feed(b *pool.Backend, r health.Result, n int) {
	for range n {
		b.RecordProbe(r)
	}
}

// judged gives the backends at the indexes a healthy verdict, as their
// first ok probe would. The ejectors' floor counts only the backends with
// a verdict, and the rig runs no prober: a test that expects an ejection
// judges the peers that keep the pool at its floor.
func (r *rig) judged(indexes ...int) {
	for _, i := range indexes {
		feed(r.backend(i), health.StatusResult(200), 1)
	}
}

func expect(t *testing.T, rec *httptest.ResponseRecorder, status int, xBackends, body string) {
	t.Helper()
	if rec.Code != status {
		t.Errorf("status %d; want %d (body %q)", rec.Code, status, rec.Body.String())
	}
	if got := rec.Header().Get("X-Backends"); got != xBackends {
		t.Errorf("X-Backends %q; want %q", got, xBackends)
	}
	if body != "" && rec.Body.String() != body {
		t.Errorf("body %q; want %q", rec.Body.String(), body)
	}
}

// healthyThree is a rig of three backends answering [0], [1] and [2].
func healthyThree(t *testing.T) *rig {
	t.Helper()
	return setup(t, options{},
		serve(t, answer(200, `[0]`)),
		serve(t, answer(200, `[1]`)),
		serve(t, answer(200, `[2]`)),
	)
}

// watchdog guards a synctest bubble that uses real backends: a bug that
// leaves the bubble waiting forever would hang the test binary, since
// goroutines kept by connections to the backends are never durably
// blocked. After a generous real-time bound it cuts those connections, so
// that the bubble either goes on or reports its deadlock with every
// goroutine's stack.
func watchdog(t *testing.T, backends ...*backend) {
	t.Helper()
	timer := time.AfterFunc(time.Minute, func() {
		for _, b := range backends {
			b.CloseClientConnections()
		}
	})
	t.Cleanup(func() { timer.Stop() })
}

// runReadmission runs the pool's readmission until the test ends, and
// checks that it returns once its context is done.
func (r *rig) runReadmission(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.pool.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context was done")
		}
	})
}
