package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/probegate/probegate/config"
)

// fanoutTestBackend is a real loopback backend. Its /healthz always answers
// 200 (the probe says ok); every other request is counted, remembered and
// answered by the test's handler.
type fanoutTestBackend struct {
	*httptest.Server
	hits atomic.Int64

	mu   sync.Mutex
	last fanoutTestRequest
}

// fanoutTestRequest is what a backend saw of the last request.
type fanoutTestRequest struct {
	method, path, query string
	header              http.Header
	body                string
}

func fanoutTestServe(t *testing.T, handler http.HandlerFunc) *fanoutTestBackend {
	t.Helper()
	b := &fanoutTestBackend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.WriteHeader(http.StatusOK)
			return
		}
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.last = fanoutTestRequest{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery, header: r.Header.Clone(), body: string(body)}
		b.mu.Unlock()
		b.hits.Add(1)
		handler(w, r)
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *fanoutTestBackend) lastRequest() fanoutTestRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// fanoutTestAnswer answers every request with a status and a body.
func fanoutTestAnswer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// fanoutTestSlow answers like fanoutTestAnswer after a delay, unless the
// request is cancelled first.
func fanoutTestSlow(delay time.Duration, status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
			fanoutTestAnswer(status, body)(w, r)
		case <-r.Context().Done():
		}
	}
}

// fanoutTestLog collects log lines from concurrent writers.
type fanoutTestLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *fanoutTestLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count is the number of lines containing every one of parts.
func (l *fanoutTestLog) count(parts ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for line := range strings.SplitSeq(l.buf.String(), "\n") {
		all := line != ""
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// fanoutTestClock is a settable clock safe for concurrent reads.
type fanoutTestClock struct{ nanos atomic.Int64 }

func newFanoutTestClock() *fanoutTestClock {
	c := &fanoutTestClock{}
	c.set(passiveTestEpoch)
	return c
}

func (c *fanoutTestClock) now() time.Time          { return time.Unix(0, c.nanos.Load()).UTC() }
func (c *fanoutTestClock) set(t time.Time)         { c.nanos.Store(t.UnixNano()) }
func (c *fanoutTestClock) advance(d time.Duration) { c.nanos.Add(int64(d)) }

// fanoutTestRig is a pool over real loopback backends (b0, b1, … in the
// order given), a Fanout over it and its metrics and logs.
type fanoutTestRig struct {
	pool     *Pool
	fanout   *Fanout
	metrics  *Metrics
	logs     *fanoutTestLog
	backends []*fanoutTestBackend
}

// fanoutTestOptions tune a rig; the zero value is a 5s timeout, no size
// limits, json_array, passive health off, probes on with thresholds 3/2.
type fanoutTestOptions struct {
	fanout  config.Fanout
	passive config.PassiveHealth
	// unprobed names the backends whose probing is disabled.
	unprobed map[int]bool
	// urls replaces a backend's URL (a dead one, or one with a base path).
	urls      map[int]string
	successes int
	now       func() time.Time
}

func fanoutTestSetup(t *testing.T, o fanoutTestOptions, backends ...*fanoutTestBackend) *fanoutTestRig {
	t.Helper()
	if o.fanout.Timeout == 0 {
		o.fanout.Timeout = model.Duration(5 * time.Second)
	}
	if o.successes == 0 {
		o.successes = 2
	}
	cfg := testConfig()
	cfg.HealthProbe.Successes = o.successes
	for i, b := range backends {
		bc := config.Backend{Name: fmt.Sprintf("b%d", i), URL: b.URL}
		if u, ok := o.urls[i]; ok {
			bc.URL = u
		}
		if o.unprobed[i] {
			off := false
			bc.HealthProbe.Enabled = &off
		}
		cfg.Backends = append(cfg.Backends, bc)
	}
	logs := &fanoutTestLog{}
	logger := log.NewLogfmtLogger(logs)
	pool, err := NewPool(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	metrics := NewMetrics(prometheus.NewRegistry())
	f := NewFanout(pool, o.fanout, o.passive, metrics, logger, o.now)
	t.Cleanup(func() {
		for _, b := range pool.Backends() {
			b.Client.CloseIdleConnections()
		}
	})
	return &fanoutTestRig{pool: pool, fanout: f, metrics: metrics, logs: logs, backends: backends}
}

// do runs one round through ServeHTTP from client address 192.0.2.7.
func (r *fanoutTestRig) do(method, target, body string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.RemoteAddr = "192.0.2.7:5555"
	for name, values := range header {
		req.Header[name] = values
	}
	rec := httptest.NewRecorder()
	r.fanout.ServeHTTP(rec, req)
	return rec
}

func (r *fanoutTestRig) backend(i int) *Backend { return r.pool.Backends()[i] }

// probe sends real health probes to backend i and records them.
func (r *fanoutTestRig) probe(t *testing.T, i, times int) {
	t.Helper()
	b := r.backend(i)
	for range times {
		res := Probe(context.Background(), b.Client, b.URL+b.Probe.Path, time.Second)
		if res.Class != ClassOK {
			t.Fatalf("probe of %s: %+v; want ok", b.Name, res)
		}
		b.Record(res)
	}
}

// counters are the round counters: requests, partial, failed.
func (r *fanoutTestRig) counters() [3]float64 {
	return [3]float64{
		testutil.ToFloat64(r.metrics.FanoutRequests),
		testutil.ToFloat64(r.metrics.FanoutPartial),
		testutil.ToFloat64(r.metrics.FanoutFailed),
	}
}

func (r *fanoutTestRig) errors(i int, reason FanoutReason) uint64 {
	return r.backend(i).Snapshot().Traffic.Errors[reason]
}

func (r *fanoutTestRig) window(i int) passiveCounts {
	b := r.backend(i)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.traffic.window.Counts(r.fanout.now(), time.Duration(r.fanout.settings.Load().passive.Window))
}

func fanoutTestExpect(t *testing.T, rec *httptest.ResponseRecorder, status int, xBackends, body string) {
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

func TestFanoutMergesJSONArraysInConfigOrder(t *testing.T) {
	// The first backend answers last: the merge still puts it first.
	rig := fanoutTestSetup(t, fanoutTestOptions{},
		fanoutTestServe(t, fanoutTestSlow(60*time.Millisecond, 200, `[1, 2]`)),
		fanoutTestServe(t, fanoutTestAnswer(200, ` ["b"] `)),
		fanoutTestServe(t, fanoutTestSlow(20*time.Millisecond, 200, `[{"c":[3]}]`)),
	)
	rec := rig.do("GET", "/fanout/query", "", nil)
	fanoutTestExpect(t, rec, 200, "3/3", `[1, 2,"b",{"c":[3]}]`)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if got := rig.counters(); got != [3]float64{1, 0, 0} {
		t.Errorf("requests, partial, failed = %v; want [1 0 0]", got)
	}
	round := rig.fanout.LastRound()
	if round == nil || round.Contributed != 3 || round.Configured != 3 || round.Partial || round.Time.IsZero() {
		t.Errorf("LastRound = %+v; want 3/3, not partial", round)
	}
}

func TestFanoutNDJSON(t *testing.T) {
	rig := fanoutTestSetup(t, fanoutTestOptions{fanout: config.Fanout{Merge: "ndjson"}},
		fanoutTestServe(t, fanoutTestAnswer(200, "{\"a\":1}\n{\"a\":2}\n")),
		fanoutTestServe(t, fanoutTestAnswer(200, "{\"b\":1}\nnot json\n")),
		fanoutTestServe(t, fanoutTestAnswer(200, `{"c":1}`)),
	)
	rec := rig.do("GET", "/fanout/stream", "", nil)
	fanoutTestExpect(t, rec, 200, "2/3", "{\"a\":1}\n{\"a\":2}\n{\"c\":1}\n")
	if ct := rec.Header().Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type %q", ct)
	}
	if got := rig.errors(1, FanoutInvalidBody); got != 1 {
		t.Errorf("invalid_body errors of b1 = %d; want 1", got)
	}
}

func TestFanoutForwardsMethodPathQueryBodyAndHeaders(t *testing.T) {
	for _, method := range []string{"GET", "HEAD", "POST"} {
		t.Run(method, func(t *testing.T) {
			plain := fanoutTestServe(t, fanoutTestAnswer(200, `[]`))
			based := fanoutTestServe(t, fanoutTestAnswer(200, `[]`))
			rig := fanoutTestSetup(t, fanoutTestOptions{urls: map[int]string{1: based.URL + "/base/"}}, plain, based)
			header := http.Header{
				"Connection":          {"keep-alive, X-Hop-Listed"},
				"X-Hop-Listed":        {"secret"},
				"Keep-Alive":          {"timeout=5"},
				"Proxy-Authorization": {"Basic c2VjcmV0"},
				"Te":                  {"trailers"},
				"Upgrade":             {"h2c"},
				"Accept-Encoding":     {"br"},
				"X-Forwarded-For":     {"10.0.0.1"},
				"X-Custom":            {"kept"},
				"Authorization":       {"Bearer client-token"},
				"Expect":              {"100-continue"},
			}
			body := ""
			if method == "POST" {
				body = `{"query":"x"}`
			}
			rec := rig.do(method, "/fanout/api/v1/a%2Fb?q=a%20b&n=1", body, header)
			fanoutTestExpect(t, rec, 200, "2/2", "")
			for i, wantPath := range []string{"/api/v1/a%2Fb", "/base/api/v1/a%2Fb"} {
				got := rig.backends[i].lastRequest()
				if got.method != method || got.path != wantPath || got.query != "q=a%20b&n=1" || got.body != body {
					t.Errorf("backend %d saw %s %s?%s body %q; want %s %s?q=a%%20b&n=1 body %q",
						i, got.method, got.path, got.query, got.body, method, wantPath, body)
				}
				for _, hop := range []string{"X-Hop-Listed", "Keep-Alive", "Proxy-Authorization", "Te", "Upgrade", "Expect"} {
					if v, ok := got.header[hop]; ok {
						t.Errorf("backend %d got hop-by-hop header %s: %q", i, hop, v)
					}
				}
				if xff := got.header.Get("X-Forwarded-For"); xff != "10.0.0.1, 192.0.2.7" {
					t.Errorf("backend %d X-Forwarded-For %q; want %q", i, xff, "10.0.0.1, 192.0.2.7")
				}
				if got.header.Get("X-Custom") != "kept" || got.header.Get("Authorization") != "Bearer client-token" {
					t.Errorf("backend %d lost end-to-end headers: %v", i, got.header)
				}
				if ae := got.header.Get("Accept-Encoding"); ae == "br" {
					t.Errorf("backend %d got the client's Accept-Encoding %q", i, ae)
				}
			}
			if method == "HEAD" && rec.Body.Len() != 0 {
				t.Errorf("HEAD answered a body %q", rec.Body.String())
			}
		})
	}
}

// fanoutTestGzip compresses data.
func fanoutTestGzip(t *testing.T, data []byte) []byte {
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

// TestFanoutGzipAnswerIsMerged: probegate does not ask for compression nor
// forward the client's Accept-Encoding, but a backend that gzips anyway
// still contributes; one that announces gzip and sends garbage does not.
func TestFanoutGzipAnswerIsMerged(t *testing.T) {
	zipped := fanoutTestGzip(t, []byte(`["zipped"]`))
	gzipAnswer := func(body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(body)
		}
	}
	rig := fanoutTestSetup(t, fanoutTestOptions{},
		fanoutTestServe(t, gzipAnswer(zipped)), fanoutTestServe(t, gzipAnswer([]byte(`["not gzip"]`))))
	rec := rig.do("GET", "/fanout/q", "", http.Header{"Accept-Encoding": {"br"}})
	fanoutTestExpect(t, rec, 200, "1/2", `["zipped"]`)
	if ae := rig.backends[0].lastRequest().header.Get("Accept-Encoding"); ae == "br" {
		t.Errorf("the backend got the client's Accept-Encoding %q", ae)
	}
	if got := rig.errors(1, FanoutInvalidBody); got != 1 {
		t.Errorf("invalid_body errors of the false gzip backend %d; want 1", got)
	}
}

func TestFanoutBackendsThatDoNotContribute(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		dead    bool
		reason  FanoutReason
	}{
		{"5xx", fanoutTestAnswer(503, `["x"]`), false, FanoutHTTP5xx},
		{"501", fanoutTestAnswer(501, `["x"]`), false, FanoutHTTP5xx},
		{"429", fanoutTestAnswer(429, `["x"]`), false, FanoutHTTP429},
		{"redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }, false, FanoutHTTP3xx},
		{"object", fanoutTestAnswer(200, `{"a":1}`), false, FanoutInvalidBody},
		{"html", fanoutTestAnswer(200, `<html></html>`), false, FanoutInvalidBody},
		{"empty", fanoutTestAnswer(200, ``), false, FanoutInvalidBody},
		{"connection refused", nil, true, FanoutTransport},
		{"connection reset", func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}, false, FanoutTransport},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := fanoutTestOptions{}
			bad := fanoutTestServe(t, c.handler)
			if c.dead {
				opts.urls = map[int]string{1: deadURL(t)}
			}
			rig := fanoutTestSetup(t, opts, fanoutTestServe(t, fanoutTestAnswer(200, `[1]`)), bad)
			rec := rig.do("GET", "/fanout/q", "", nil)
			fanoutTestExpect(t, rec, 200, "1/2", `[1]`)
			for _, r := range FanoutReasons() {
				want := uint64(0)
				if r == c.reason {
					want = 1
				}
				if got := rig.errors(1, r); got != want {
					t.Errorf("b1 errors{reason=%s} = %d; want %d", r, got, want)
				}
			}
			if got := rig.counters(); got != [3]float64{1, 1, 0} {
				t.Errorf("requests, partial, failed = %v; want [1 1 0]", got)
			}
			if round := rig.fanout.LastRound(); round == nil || !round.Partial || round.Contributed != 1 || round.Configured != 2 {
				t.Errorf("LastRound = %+v; want partial 1/2", round)
			}
		})
	}
}

// fanoutTestHealthyThree is a rig of three backends answering [0], [1]
// and [2].
func fanoutTestHealthyThree(t *testing.T) *fanoutTestRig {
	t.Helper()
	return fanoutTestSetup(t, fanoutTestOptions{},
		fanoutTestServe(t, fanoutTestAnswer(200, `[0]`)),
		fanoutTestServe(t, fanoutTestAnswer(200, `[1]`)),
		fanoutTestServe(t, fanoutTestAnswer(200, `[2]`)),
	)
}

func TestFanoutSkipsDownBackendButCountsItConfigured(t *testing.T) {
	rig := fanoutTestHealthyThree(t)
	feed(rig.backend(1), StatusResult(503), 3)
	rec := rig.do("GET", "/fanout/q", "", nil)
	fanoutTestExpect(t, rec, 200, "2/3", `[0,2]`)
	if hits := rig.backends[1].hits.Load(); hits != 0 {
		t.Errorf("the down backend got %d requests; want 0", hits)
	}
	if got := rig.counters(); got != [3]float64{1, 1, 0} {
		t.Errorf("requests, partial, failed = %v; want [1 1 0]", got)
	}
}

// TestFanoutHangingBackendIsBoundedByTimeoutThenSkipped: before the probes
// take a hanging backend out, fanout.timeout bounds the round and cancels
// its request; once it is down it is not asked at all.
func TestFanoutHangingBackendIsBoundedByTimeoutThenSkipped(t *testing.T) {
	cancelled := make(chan struct{}, 10)
	hang := fanoutTestServe(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-time.After(time.Minute):
		}
	})
	rig := fanoutTestSetup(t, fanoutTestOptions{fanout: config.Fanout{Timeout: model.Duration(200 * time.Millisecond)}},
		fanoutTestServe(t, fanoutTestAnswer(200, `[0]`)), hang, fanoutTestServe(t, fanoutTestAnswer(200, `[2]`)))

	start := time.Now()
	rec := rig.do("GET", "/fanout/q", "", nil)
	elapsed := time.Since(start)
	fanoutTestExpect(t, rec, 200, "2/3", `[0,2]`)
	// The bound is loose on purpose: the hang lasts a minute.
	if elapsed > 10*time.Second {
		t.Errorf("round took %v with a 200ms timeout", elapsed)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging backend's request was never cancelled")
	}
	if got := rig.errors(1, FanoutTimeout); got != 1 {
		t.Errorf("timeout errors of b1 = %d; want 1", got)
	}

	feed(rig.backend(1), TimeoutResult("probe timed out"), 3)
	rec = rig.do("GET", "/fanout/q", "", nil)
	fanoutTestExpect(t, rec, 200, "2/3", `[0,2]`)
	if hits := hang.hits.Load(); hits != 1 {
		t.Errorf("the hanging backend got %d requests; want only the one before it was down", hits)
	}
}

func TestFanoutFailOpenSendsToAll(t *testing.T) {
	rig := fanoutTestHealthyThree(t)
	for i := range 3 {
		feed(rig.backend(i), StatusResult(503), 3)
	}
	if _, failOpen := rig.pool.Select(); !failOpen {
		t.Fatal("the pool did not fail open with every backend down")
	}
	rec := rig.do("GET", "/fanout/q", "", nil)
	fanoutTestExpect(t, rec, 200, "3/3", `[0,1,2]`)
	for i, b := range rig.backends {
		if hits := b.hits.Load(); hits != 1 {
			t.Errorf("b%d got %d requests; want 1", i, hits)
		}
	}
}

func TestFanoutRelaysFirst4xxWhenNobodyContributed(t *testing.T) {
	refusal := func(delay time.Duration, status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(delay)
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("X-Detail", body)
			w.Header().Set("X-Backends", "9/9")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	// b1's 400 comes after b2's 404 in time but first in config order.
	rig := fanoutTestSetup(t, fanoutTestOptions{},
		fanoutTestServe(t, fanoutTestAnswer(503, `down`)),
		fanoutTestServe(t, refusal(50*time.Millisecond, 400, `{"error":"bad query"}`)),
		fanoutTestServe(t, refusal(0, 404, `{"error":"no such thing"}`)),
	)
	rec := rig.do("GET", "/fanout/q?bad", "", nil)
	fanoutTestExpect(t, rec, 400, "0/3", `{"error":"bad query"}`)
	if rec.Header().Get("Content-Type") != "application/problem+json" || rec.Header().Get("X-Detail") != `{"error":"bad query"}` {
		t.Errorf("relayed headers %v; want the first 4xx backend's", rec.Header())
	}
	if got := rig.counters(); got != [3]float64{1, 1, 1} {
		t.Errorf("requests, partial, failed = %v; want [1 1 1]", got)
	}
	if rig.errors(1, FanoutHTTP4xx) != 1 || rig.errors(2, FanoutHTTP4xx) != 1 {
		t.Error("the 4xx answers were not counted as http_4xx")
	}

	// A 4xx loses to any contribution.
	rig = fanoutTestSetup(t, fanoutTestOptions{},
		fanoutTestServe(t, refusal(0, 400, `bad`)), fanoutTestServe(t, fanoutTestAnswer(200, `[7]`)))
	fanoutTestExpect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/2", `[7]`)

	// 429 is the backend's capacity, not the client's query: not relayed.
	rig = fanoutTestSetup(t, fanoutTestOptions{}, fanoutTestServe(t, fanoutTestAnswer(429, `slow down`)))
	fanoutTestExpect(t, rig.do("GET", "/fanout/q", "", nil), 502, "0/1", "")
}

func TestFanoutNobodyAnsweredIs502WithJSON(t *testing.T) {
	rig := fanoutTestSetup(t, fanoutTestOptions{urls: map[int]string{0: deadURL(t)}},
		fanoutTestServe(t, nil), fanoutTestServe(t, fanoutTestAnswer(503, `down`)))
	rec := rig.do("GET", "/fanout/q", "", nil)
	fanoutTestExpect(t, rec, 502, "0/2", "")
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q; want application/json", ct)
	}
	var got fanoutError
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("502 body %q is not JSON: %v", rec.Body.String(), err)
	}
	want := []fanoutBackendResult{{Backend: "b0", Reason: "transport"}, {Backend: "b1", Reason: "http_5xx", Status: 503}}
	if got.Error == "" || fmt.Sprint(got.Backends) != fmt.Sprint(want) {
		t.Errorf("502 body %+v; want an error and backends %+v", got, want)
	}
	if got := rig.counters(); got != [3]float64{1, 1, 1} {
		t.Errorf("requests, partial, failed = %v; want [1 1 1]", got)
	}

	empty := fanoutTestSetup(t, fanoutTestOptions{})
	rec = empty.do("GET", "/fanout/q", "", nil)
	fanoutTestExpect(t, rec, 502, "0/0", "")
	if !strings.Contains(rec.Body.String(), "no backends are configured") {
		t.Errorf("body %q does not say that no backend is configured", rec.Body.String())
	}
}

// TestFanoutHugeResponseIsCutOffAtTheLimit: a backend streaming 1 GiB, and
// one announcing 1 GiB, cost the limit, not the gigabyte.
func TestFanoutHugeResponseIsCutOffAtTheLimit(t *testing.T) {
	const limit, huge = 1 << 20, 1 << 30
	chunk := bytes.Repeat([]byte("1,"), 16<<10)
	streamed := make(chan int64, 2)
	stream := func(declare bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			var written int64
			defer func() { streamed <- written }()
			if declare {
				w.Header().Set("Content-Length", fmt.Sprint(huge))
			}
			w.WriteHeader(200)
			_, _ = w.Write([]byte("["))
			for written < huge {
				n, err := w.Write(chunk)
				written += int64(n)
				if err != nil {
					return
				}
			}
		}
	}
	// A gzip bomb: 1 GiB of decoded body in about a megabyte on the wire,
	// as 1024 concatenated gzip members of 1 MiB each.
	member := fanoutTestGzip(t, append([]byte("["), make([]byte, 1<<20-1)...))
	bomb := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		for range huge / (1 << 20) {
			if _, err := w.Write(member); err != nil {
				return
			}
		}
	}
	rig := fanoutTestSetup(t, fanoutTestOptions{fanout: config.Fanout{MaxResponseBytes: limit}},
		fanoutTestServe(t, stream(false)), fanoutTestServe(t, fanoutTestAnswer(200, `[1]`)),
		fanoutTestServe(t, stream(true)), fanoutTestServe(t, bomb))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec := rig.do("GET", "/fanout/q", "", nil)
	runtime.ReadMemStats(&after)
	fanoutTestExpect(t, rec, 200, "1/4", `[1]`)
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 32<<20 {
		t.Errorf("the round allocated %d MiB with a 1 MiB limit", allocated>>20)
	}
	for range 2 {
		select {
		case written := <-streamed:
			if written >= huge {
				t.Errorf("a backend wrote its whole %d bytes: the fan-out kept reading", written)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a streaming backend is still writing: the connection was not closed")
		}
	}
	for _, i := range []int{0, 2, 3} {
		if got := rig.errors(i, FanoutTooLarge); got != 1 {
			t.Errorf("too_large errors of b%d = %d; want 1", i, got)
		}
	}
}

func TestFanoutRequestBodyLimit(t *testing.T) {
	echo := fanoutTestServe(t, fanoutTestAnswer(200, `[]`))
	rig := fanoutTestSetup(t, fanoutTestOptions{fanout: config.Fanout{MaxRequestBytes: 16}}, echo)
	rec := rig.do("POST", "/fanout/q", strings.Repeat("x", 17), nil)
	fanoutTestExpect(t, rec, http.StatusRequestEntityTooLarge, "0/1", "")
	if !strings.Contains(rec.Body.String(), "max_request_bytes") {
		t.Errorf("413 body %q does not name the limit", rec.Body.String())
	}
	if echo.hits.Load() != 0 {
		t.Error("a body over the limit reached the backend")
	}
	fanoutTestExpect(t, rig.do("POST", "/fanout/q", strings.Repeat("x", 16), nil), 200, "1/1", `[]`)
	if got := echo.lastRequest().body; got != strings.Repeat("x", 16) {
		t.Errorf("backend got body %q", got)
	}
	if got := rig.counters(); got != [3]float64{1, 0, 0} {
		t.Errorf("requests, partial, failed = %v; want only the accepted round counted", got)
	}
}

func TestFanoutHEAD(t *testing.T) {
	rig := fanoutTestSetup(t, fanoutTestOptions{},
		fanoutTestServe(t, fanoutTestAnswer(200, `[1]`)), fanoutTestServe(t, fanoutTestAnswer(503, ``)))
	rec := rig.do("HEAD", "/fanout/q", "", nil)
	fanoutTestExpect(t, rec, 200, "1/2", "")
	if rec.Body.Len() != 0 || rig.backends[0].lastRequest().method != "HEAD" {
		t.Errorf("HEAD: body %q, backend saw %s", rec.Body.String(), rig.backends[0].lastRequest().method)
	}
}

func TestFanoutMethodNotAllowed(t *testing.T) {
	b := fanoutTestServe(t, fanoutTestAnswer(200, `[]`))
	rig := fanoutTestSetup(t, fanoutTestOptions{}, b)
	rec := rig.do("PUT", "/fanout/q", "x", nil)
	fanoutTestExpect(t, rec, http.StatusMethodNotAllowed, "0/1", "")
	if rec.Header().Get("Allow") != "GET, HEAD, POST" || b.hits.Load() != 0 {
		t.Errorf("Allow %q, backend hits %d", rec.Header().Get("Allow"), b.hits.Load())
	}
}

func TestFanoutUpdate(t *testing.T) {
	rig := fanoutTestSetup(t, fanoutTestOptions{}, fanoutTestServe(t, fanoutTestAnswer(200, "[1]")))
	rig.fanout.Update(config.Fanout{Merge: "ndjson"}, config.PassiveHealth{})
	fanoutTestExpect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/1", "[1]\n")
	rig.fanout.Update(config.Fanout{Merge: "xml", Timeout: model.Duration(time.Second)}, config.PassiveHealth{})
	fanoutTestExpect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/1", "[1]\n")
	if got := rig.fanout.settings.Load().fanout.Timeout; got != model.Duration(time.Second) {
		t.Errorf("the rest of the update was not applied: timeout %v", got)
	}
	if rig.logs.count("level=error", "xml") != 1 {
		t.Errorf("the unknown merge format was not logged:\n%s", rig.logs.buf.String())
	}
}

// TestFanoutClientDisconnectCancelsEveryBackendRequest serves the fan-out
// over real HTTP, lets the client hang up while every backend is still
// working, and checks that each backend request is cancelled, that the
// round counts against nobody, and that no goroutine is left behind.
func TestFanoutClientDisconnectCancelsEveryBackendRequest(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	// Cleanups run last-registered first: this one runs after every server
	// and connection is closed.
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })

	started := make(chan struct{}, 3)
	cancelled := make(chan struct{}, 3)
	hang := func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-time.After(time.Minute):
		}
	}
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(time.Minute), MaxFailures: 1, MaxEjectedPercent: 100}
	rig := fanoutTestSetup(t, fanoutTestOptions{fanout: config.Fanout{Timeout: model.Duration(time.Minute)}, passive: passive},
		fanoutTestServe(t, hang), fanoutTestServe(t, hang), fanoutTestServe(t, hang))
	handled := make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(handled)
		rig.fanout.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", front.URL+"/fanout/q", nil)
	if err != nil {
		t.Fatal(err)
	}
	clientDone := make(chan error, 1)
	go func() {
		resp, err := transport.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		clientDone <- err
	}()
	for i := range 3 {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of 3 backends got the request", i)
		}
	}
	cancel()
	for i := range 3 {
		select {
		case <-cancelled:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of 3 backend requests were cancelled after the client hung up", i)
		}
	}
	select {
	case <-handled:
	case <-time.After(10 * time.Second):
		t.Fatal("the fan-out handler did not return after the client hung up")
	}
	if err := <-clientDone; err == nil {
		t.Error("the cancelled client request succeeded")
	}
	if got := rig.counters(); got != [3]float64{1, 0, 0} {
		t.Errorf("requests, partial, failed = %v; want [1 0 0]: an abandoned round is nobody's failure", got)
	}
	if round := rig.fanout.LastRound(); round != nil {
		t.Errorf("LastRound = %+v; want none for an abandoned round", round)
	}
	for i := range 3 {
		if c := rig.window(i); c.Requests() != 0 {
			t.Errorf("b%d passive window %+v; a cancelled request must count as neither", i, c)
		}
		if s := rig.backend(i).Snapshot(); s.Traffic.Errors != [numFanoutReasons]uint64{} || s.Health.Ejected {
			t.Errorf("b%d traffic %+v ejected %v after a client hang-up", i, s.Traffic, s.Health.Ejected)
		}
	}
}

// TestPassiveHealthCountsOutcomes checks which fan-out outcomes passive
// health counts as failures: transport, timeout, 429, 5xx except 501.
func TestPassiveHealthCountsOutcomes(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		dead    bool
		failed  bool
	}{
		{"200", fanoutTestAnswer(200, `[1]`), false, false},
		{"200 not an array", fanoutTestAnswer(200, `{}`), false, false},
		{"302", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/x", http.StatusFound) }, false, false},
		{"404", fanoutTestAnswer(404, ``), false, false},
		{"501", fanoutTestAnswer(501, ``), false, false},
		{"500", fanoutTestAnswer(500, ``), false, true},
		{"503", fanoutTestAnswer(503, ``), false, true},
		{"429", fanoutTestAnswer(429, ``), false, true},
		{"timeout", fanoutTestSlow(time.Second, 200, `[1]`), false, true},
		{"connection refused", nil, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := fanoutTestOptions{
				fanout:  config.Fanout{Timeout: model.Duration(100 * time.Millisecond)},
				passive: config.PassiveHealth{Enabled: true, Window: model.Duration(time.Minute), MaxFailures: 100},
			}
			if c.dead {
				opts.urls = map[int]string{0: deadURL(t)}
			}
			rig := fanoutTestSetup(t, opts, fanoutTestServe(t, c.handler))
			rig.do("GET", "/fanout/q", "", nil)
			want := passiveCounts{Successes: 1}
			if c.failed {
				want = passiveCounts{Failures: 1}
			}
			if got := rig.window(0); got != want {
				t.Errorf("window %+v; want %+v", got, want)
			}
		})
	}
}

// passiveTestRig is three backends whose probe path says ok; b0 fails
// every fan-out request with 503. Probes are on (successes 3) and every
// backend has been probed once, so all are healthy.
func passiveTestRig(t *testing.T, clock *fanoutTestClock) *fanoutTestRig {
	t.Helper()
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(30 * time.Second), MaxFailures: 3, MaxEjectedPercent: 50}
	rig := fanoutTestSetup(t, fanoutTestOptions{passive: passive, successes: 3, now: clock.now},
		fanoutTestServe(t, fanoutTestAnswer(503, `overloaded`)),
		fanoutTestServe(t, fanoutTestAnswer(200, `[1]`)),
		fanoutTestServe(t, fanoutTestAnswer(200, `[2]`)),
	)
	for i := range 3 {
		rig.probe(t, i, 1)
	}
	return rig
}

// TestPassiveHealthEjectsBackendFailingTrafficWhileProbeSaysOK: a backend
// whose probe path says ok but whose real traffic fails is ejected at
// exactly max_failures, gets no traffic while out, comes back after exactly
// `successes` ok probes, and comes back to an empty window.
func TestPassiveHealthEjectsBackendFailingTrafficWhileProbeSaysOK(t *testing.T) {
	clock := newFanoutTestClock()
	rig := passiveTestRig(t, clock)
	failing := rig.backend(0)
	for round := 1; round <= 2; round++ {
		fanoutTestExpect(t, rig.do("GET", "/fanout/q", "", nil), 200, "2/3", `[1,2]`)
		if h := failing.Health(); !h.InService() {
			t.Fatalf("b0 ejected after %d failures; want at max_failures 3", round)
		}
	}
	fanoutTestExpect(t, rig.do("GET", "/fanout/q", "", nil), 200, "2/3", `[1,2]`)
	s := failing.Snapshot()
	if s.Health.InService() || !s.Health.Ejected || s.Traffic.Ejections != 1 || s.Transitions[StateUnhealthy] != 1 {
		t.Fatalf("after 3 failures: health %+v, ejections %d, transitions to unhealthy %d; want ejected once",
			s.Health, s.Traffic.Ejections, s.Transitions[StateUnhealthy])
	}
	if n := rig.logs.count(`msg="Backend ejected by passive health"`, "backend=b0", "failures=3", "requests=3", "readmission=probes"); n != 1 {
		t.Errorf("ejection logged %d times; want once:\n%s", n, rig.logs.buf.String())
	}

	fanoutTestExpect(t, rig.do("GET", "/fanout/q", "", nil), 200, "2/3", `[1,2]`)
	if hits := rig.backends[0].hits.Load(); hits != 3 {
		t.Errorf("the ejected backend got %d requests; want still 3", hits)
	}
	rig.probe(t, 0, 2)
	if failing.Health().InService() {
		t.Fatal("readmitted after 2 ok probes; want exactly successes=3")
	}
	rig.probe(t, 0, 1)
	if h := failing.Health(); !h.InService() || h.Ejected {
		t.Fatalf("after 3 ok probes: %+v; want readmitted", h)
	}
	if n := rig.logs.count("backend=b0", "from=unhealthy", "to=healthy"); n != 1 {
		t.Errorf("readmission logged %d times; want once", n)
	}

	// Still within the window of the failures that ejected it, the
	// readmitted backend starts from an empty window: it takes
	// max_failures new failures to eject it again.
	for range 2 {
		rig.do("GET", "/fanout/q", "", nil)
	}
	if !failing.Health().InService() || rig.backends[0].hits.Load() != 5 {
		t.Fatal("the readmitted backend was ejected again by the failures that ejected it")
	}
	rig.do("GET", "/fanout/q", "", nil)
	if s := failing.Snapshot(); s.Health.InService() || s.Traffic.Ejections != 2 {
		t.Errorf("after 3 new failures: %+v, ejections %d; want ejected a second time", s.Health, s.Traffic.Ejections)
	}
	if n := rig.logs.count(`msg="Backend ejected by passive health"`); n != 2 {
		t.Errorf("%d ejections logged; want 2", n)
	}
}

// TestPassiveHealthWindowEndDoesNotReadmitProbedBackend: the end of the
// window is no proof of recovery; only probes readmit a probed backend.
func TestPassiveHealthWindowEndDoesNotReadmitProbedBackend(t *testing.T) {
	clock := newFanoutTestClock()
	rig := passiveTestRig(t, clock)
	for range 3 {
		rig.do("GET", "/fanout/q", "", nil)
	}
	if rig.backend(0).Health().InService() {
		t.Fatal("not ejected after max_failures")
	}
	clock.advance(time.Hour)
	fanoutTestExpect(t, rig.do("GET", "/fanout/q", "", nil), 200, "2/3", `[1,2]`)
	if h := rig.backend(0).Health(); h.InService() || rig.backends[0].hits.Load() != 3 {
		t.Errorf("an hour after the ejection: %+v, %d requests; want still out", h, rig.backends[0].hits.Load())
	}
}

func TestPassiveHealthNeverEjectsMoreThanMaxEjectedPercent(t *testing.T) {
	for _, c := range []struct {
		backends    int
		percent     float64
		wantEjected int
	}{{3, 50, 1}, {4, 50, 2}, {1, 50, 0}, {1, 100, 1}, {3, 0, 0}} {
		t.Run(fmt.Sprintf("%d backends %v%%", c.backends, c.percent), func(t *testing.T) {
			passive := config.PassiveHealth{Enabled: true, Window: model.Duration(time.Minute), MaxFailures: 2, MaxEjectedPercent: c.percent}
			var backends []*fanoutTestBackend
			for range c.backends {
				backends = append(backends, fanoutTestServe(t, fanoutTestAnswer(503, ``)))
			}
			rig := fanoutTestSetup(t, fanoutTestOptions{passive: passive}, backends...)
			for range 5 {
				rig.do("GET", "/fanout/q", "", nil)
			}
			ejected := 0
			for i := range c.backends {
				if rig.backend(i).Health().Ejected {
					ejected++
				}
			}
			if ejected != c.wantEjected {
				t.Errorf("%d ejected; want %d", ejected, c.wantEjected)
			}
		})
	}
}

func TestPassiveHealthSuccessRatio(t *testing.T) {
	var n atomic.Int64
	alternating := func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			fanoutTestAnswer(503, ``)(w, r)
			return
		}
		fanoutTestAnswer(200, `[0]`)(w, r)
	}
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(time.Minute), MinSuccessRatio: 0.9, MinRequests: 10, MaxEjectedPercent: 50}
	rig := fanoutTestSetup(t, fanoutTestOptions{passive: passive},
		fanoutTestServe(t, alternating), fanoutTestServe(t, fanoutTestAnswer(200, `[1]`)))
	for round := 1; round <= 9; round++ {
		rig.do("GET", "/fanout/q", "", nil)
		if !rig.backend(0).Health().InService() {
			t.Fatalf("ejected after %d outcomes; want only once min_requests=10 are in", round)
		}
	}
	rig.do("GET", "/fanout/q", "", nil)
	if h := rig.backend(0).Health(); h.InService() || !h.Ejected {
		t.Errorf("a 50%% success ratio below 90%% with 10 outcomes did not eject: %+v", h)
	}
	if rig.backend(1).Health().Ejected {
		t.Error("the healthy backend was ejected")
	}
}

func TestPassiveHealthReadmitsUnprobedBackendWhenWindowElapsed(t *testing.T) {
	const window = 30 * time.Second
	clock := newFanoutTestClock()
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(window), MaxFailures: 2, MaxEjectedPercent: 50}
	var failing atomic.Bool
	failing.Store(true)
	flaky := fanoutTestServe(t, func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			fanoutTestAnswer(503, ``)(w, r)
			return
		}
		fanoutTestAnswer(200, `[0]`)(w, r)
	})
	rig := fanoutTestSetup(t, fanoutTestOptions{passive: passive, unprobed: map[int]bool{0: true}, now: clock.now},
		flaky, fanoutTestServe(t, fanoutTestAnswer(200, `[1]`)))
	rig.do("GET", "/fanout/q", "", nil)
	rig.do("GET", "/fanout/q", "", nil)
	if h := rig.backend(0).Health(); !h.Ejected {
		t.Fatalf("not ejected after max_failures: %+v", h)
	}
	ejectedAt := clock.now()
	failing.Store(false)

	clock.set(ejectedAt.Add(window - time.Nanosecond))
	fanoutTestExpect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/2", `[1]`)
	if flaky.hits.Load() != 2 {
		t.Errorf("the ejected backend got traffic before the window elapsed")
	}
	clock.set(ejectedAt.Add(window))
	fanoutTestExpect(t, rig.do("GET", "/fanout/q", "", nil), 200, "2/2", `[0,1]`)
	if h := rig.backend(0).Health(); h.Ejected || h.State != StateUnknown {
		t.Errorf("after the window: %+v; want readmitted to unknown", h)
	}
	if n := rig.logs.count(`msg="Backend readmitted by passive health`, "backend=b0"); n != 1 {
		t.Errorf("readmission logged %d times; want once:\n%s", n, rig.logs.buf.String())
	}
	if got := rig.backend(0).Snapshot().Transitions[StateUnknown]; got != 1 {
		t.Errorf("transitions to unknown %d; want 1", got)
	}
}

// TestPassiveHealthReadmitsProbeUnsupportedBackendWhenWindowElapsed: a
// backend whose probe path refuses never gets an ok probe, so, like one
// that is not probed, the elapsed window readmits it rather than nothing.
func TestPassiveHealthReadmitsProbeUnsupportedBackendWhenWindowElapsed(t *testing.T) {
	const window = 30 * time.Second
	clock := newFanoutTestClock()
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(window), MaxFailures: 2, MaxEjectedPercent: 50}
	rig := fanoutTestSetup(t, fanoutTestOptions{passive: passive, now: clock.now},
		fanoutTestServe(t, fanoutTestAnswer(503, ``)), fanoutTestServe(t, fanoutTestAnswer(200, `[1]`)))
	feed(rig.backend(0), StatusResult(404), 1)
	rig.do("GET", "/fanout/q", "", nil)
	rig.do("GET", "/fanout/q", "", nil)
	if h := rig.backend(0).Health(); !h.Ejected {
		t.Fatalf("not ejected after max_failures: %+v", h)
	}
	if n := rig.logs.count(`msg="Backend ejected by passive health"`, "from=probe_unsupported", "readmission=window"); n != 1 {
		t.Errorf("ejection logged %d times with readmission=window; want once:\n%s", n, rig.logs.buf.String())
	}
	feed(rig.backend(0), StatusResult(404), 5)
	clock.advance(window)
	fanoutTestExpect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/2", `[1]`)
	if h := rig.backend(0).Health(); h.Ejected || !h.InService() || rig.backends[0].hits.Load() != 3 {
		t.Errorf("after the window: %+v, %d requests; want readmitted and asked again", h, rig.backends[0].hits.Load())
	}
}

func TestPassiveHealthDisabledNeverEjects(t *testing.T) {
	rig := fanoutTestSetup(t, fanoutTestOptions{passive: config.PassiveHealth{Window: model.Duration(time.Minute), MaxFailures: 1, MaxEjectedPercent: 100}},
		fanoutTestServe(t, fanoutTestAnswer(503, ``)), fanoutTestServe(t, fanoutTestAnswer(200, `[1]`)))
	for range 5 {
		rig.do("GET", "/fanout/q", "", nil)
	}
	if h := rig.backend(0).Health(); h.Ejected || !h.InService() {
		t.Errorf("ejected with passive health off: %+v", h)
	}
	if got := rig.errors(0, FanoutHTTP5xx); got != 5 {
		t.Errorf("http_5xx errors %d; want 5 (counted with passive health off too)", got)
	}
}

// runReadmission runs the fan-out's readmission goroutine until the test
// ends, and checks that it returns once its context is done.
func (r *fanoutTestRig) runReadmission(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.fanout.Run(ctx)
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

// fanoutTestEventually polls cond every few milliseconds until it holds or
// within has passed, and reports whether it held.
func fanoutTestEventually(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// fanoutTestEjectUnprobed is a rig of an unprobed backend that fails every
// fan-out request and a healthy one, with passive health ejecting at two
// failures in window. It runs the two rounds that eject the first backend.
func fanoutTestEjectUnprobed(t *testing.T, window time.Duration, beforeEjection func(*fanoutTestRig)) *fanoutTestRig {
	t.Helper()
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(window), MaxFailures: 2, MaxEjectedPercent: 50}
	rig := fanoutTestSetup(t, fanoutTestOptions{passive: passive, unprobed: map[int]bool{0: true}},
		fanoutTestServe(t, fanoutTestAnswer(503, ``)), fanoutTestServe(t, fanoutTestAnswer(200, `[1]`)))
	beforeEjection(rig)
	rig.do("GET", "/fanout/q", "", nil)
	rig.do("GET", "/fanout/q", "", nil)
	if h := rig.backend(0).Health(); !h.Ejected {
		t.Fatalf("not ejected after max_failures: %+v", h)
	}
	return rig
}

// TestFanoutRunReadmitsWithoutTraffic: a backend with probing disabled
// that passive health ejected comes back once the window has elapsed even
// though no fan-out round comes to notice it, so the readiness budget of an
// idle pool recovers. Run is idle (nothing due) when the ejection happens:
// the ejection has to wake it.
func TestFanoutRunReadmitsWithoutTraffic(t *testing.T) {
	const window = 200 * time.Millisecond
	rig := fanoutTestEjectUnprobed(t, window, func(rig *fanoutTestRig) { rig.runReadmission(t) })
	b := rig.backend(0)
	if !fanoutTestEventually(10*time.Second, func() bool { return !b.Health().Ejected }) {
		t.Fatalf("still ejected 10s after the ejection with a %v window and no traffic: %+v", window, b.Health())
	}
	if h := b.Health(); h.State != StateUnknown || !h.InService() {
		t.Errorf("after the window: %+v; want readmitted to unknown", h)
	}
	if hits := rig.backends[0].hits.Load(); hits != 2 {
		t.Errorf("the backend got %d requests; want only the 2 before its ejection", hits)
	}
	if got := rig.pool.Budget().CurrentHealthy; got != 2 {
		t.Errorf("readiness budget current_healthy %d; want 2 after the readmission", got)
	}
	if n := rig.logs.count(`msg="Backend readmitted by passive health`, "backend=b0"); n != 1 {
		t.Errorf("readmission logged %d times; want once:\n%s", n, rig.logs.buf.String())
	}
	if due := rig.fanout.readmitDue.Load(); due != 0 {
		t.Errorf("readmitDue %d after the last readmission; want 0 (nothing due)", due)
	}
}

// TestFanoutRunRescansWhenReloadShortensWindow: Run sleeps until the
// readmission due under the window of the ejection; a reload to a shorter
// window has to wake it, or the backend stays out for the old window.
func TestFanoutRunRescansWhenReloadShortensWindow(t *testing.T) {
	rig := fanoutTestEjectUnprobed(t, time.Hour, func(rig *fanoutTestRig) { rig.runReadmission(t) })
	b := rig.backend(0)
	// Let Run take the ejection's wake-up and go to sleep until the old
	// window's end, so that only the reload can wake it.
	if !fanoutTestEventually(10*time.Second, func() bool { return len(rig.fanout.readmitWake) == 0 }) {
		t.Fatal("Run did not take the ejection's wake-up")
	}
	time.Sleep(50 * time.Millisecond)
	s := rig.fanout.settings.Load()
	passive := s.passive
	passive.Window = model.Duration(200 * time.Millisecond)
	rig.fanout.Update(s.fanout, passive)
	if !fanoutTestEventually(10*time.Second, func() bool { return !b.Health().Ejected }) {
		t.Fatalf("still ejected 10s after a reload to a 200ms window with no traffic: %+v", b.Health())
	}
	if hits := rig.backends[0].hits.Load(); hits != 2 {
		t.Errorf("the backend got %d requests; want only the 2 before its ejection", hits)
	}
}

// TestFanoutPathsReachTheBackendsAsSent: /fanout itself and paths with
// empty segments reach the backends, under their base path, as the client
// sent them, and so do segments that merely contain dots.
func TestFanoutPathsReachTheBackendsAsSent(t *testing.T) {
	for _, c := range []struct{ target, want string }{
		{"/fanout", ""},
		{"/fanout/", "/"},
		{"/fanout?q=1", "?q=1"},
		{"/fanout/a//b", "/a//b"},
		{"/fanout//a", "//a"},
		{"/fanout/a..b/.../.x/./c", "/a..b/.../.x/./c"},
		{"/fanout/a%2Fb", "/a%2Fb"},
	} {
		t.Run(c.target, func(t *testing.T) {
			plain := fanoutTestServe(t, fanoutTestAnswer(200, `[]`))
			based := fanoutTestServe(t, fanoutTestAnswer(200, `[]`))
			rig := fanoutTestSetup(t, fanoutTestOptions{urls: map[int]string{1: based.URL + "/base"}}, plain, based)
			fanoutTestExpect(t, rig.do("GET", c.target, "", nil), 200, "2/2", "[]")
			wantPath, wantQuery, _ := strings.Cut(c.want, "?")
			for i, prefix := range []string{"", "/base"} {
				want := prefix + wantPath
				if want == "" {
					want = "/" // An empty path is sent as /.
				}
				if got := rig.backends[i].lastRequest(); got.path != want || got.query != wantQuery {
					t.Errorf("backend %d saw %s?%s; want %s?%s", i, got.path, got.query, want, wantQuery)
				}
			}
		})
	}
}

// TestFanoutRefusesPathsLeavingTheBasePath: a ".." segment, however it is
// spelled, would take the request out of a backend URL's base path, and a
// path that is not under /fanout/ as sent has no backend path at all:
// each is refused with 400, JSON and X-Backends, and reaches no backend.
func TestFanoutRefusesPathsLeavingTheBasePath(t *testing.T) {
	for _, target := range []string{
		"/fanout/..",
		"/fanout/../x",
		"/fanout/a/../../x",
		"/fanout/a/%2e%2e/b",
		"/fanout/a/.%2E/b",
		"/fanout/a%2F..%2Fb",
		"/fanout/..%5Cx",
		"/fanout%2F..",
		"/fanout%2Fx",
		"/fanou%74/x",
	} {
		t.Run(target, func(t *testing.T) {
			b := fanoutTestServe(t, fanoutTestAnswer(200, `[]`))
			rig := fanoutTestSetup(t, fanoutTestOptions{urls: map[int]string{0: b.URL + "/base"}}, b)
			rec := rig.do("GET", target, "", nil)
			fanoutTestExpect(t, rec, http.StatusBadRequest, "0/1", "")
			var got fanoutError
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Error == "" {
				t.Errorf("400 body %q is not a JSON error: %v", rec.Body.String(), err)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q; want application/json", ct)
			}
			if hits := b.hits.Load(); hits != 0 {
				t.Errorf("the backend got %d requests (last %+v); want none", hits, b.lastRequest())
			}
			if got := rig.counters(); got != [3]float64{} {
				t.Errorf("requests, partial, failed = %v; a refused request starts no round", got)
			}
		})
	}
}
