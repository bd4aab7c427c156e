package fanout

import (
	"bytes"
	"context"
	"encoding/base64"
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
	"testing/synctest"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/deadport"
	"github.com/probegate/probegate/internal/testclock"
)

func TestFanoutMergesJSONArraysInConfigOrder(t *testing.T) {
	// The first backend answers last, after the third, which answers
	// after the second: the merge still puts them in config order.
	secondIn, thirdIn := make(chan struct{}), make(chan struct{})
	rig := setup(t, options{},
		serve(t, after(thirdIn, nil, answer(200, `[1, 2]`))),
		serve(t, after(nil, secondIn, answer(200, ` ["b"] `))),
		serve(t, after(secondIn, thirdIn, answer(200, `[{"c":[3]}]`))),
	)
	rec := rig.do("GET", "/fanout/query", "", nil)
	expect(t, rec, 200, "3/3", `[1, 2,"b",{"c":[3]}]`)
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
	rig := setup(t, options{fanout: config.Fanout{Merge: "ndjson"}},
		serve(t, answer(200, "{\"a\":1}\n{\"a\":2}\n")),
		serve(t, answer(200, "{\"b\":1}\nnot json\n")),
		serve(t, answer(200, `{"c":1}`)),
	)
	rec := rig.do("GET", "/fanout/stream", "", nil)
	expect(t, rec, 200, "2/3", "{\"a\":1}\n{\"a\":2}\n{\"c\":1}\n")
	if ct := rec.Header().Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type %q", ct)
	}
	if got := rig.errors(1, traffic.InvalidBody); got != 1 {
		t.Errorf("invalid_body errors of b1 = %d; want 1", got)
	}
}

func TestFanoutForwardsMethodPathQueryBodyAndHeaders(t *testing.T) {
	for _, method := range []string{"GET", "HEAD", "POST"} {
		t.Run(method, func(t *testing.T) {
			plain := serve(t, answer(200, `[]`))
			based := serve(t, answer(200, `[]`))
			rig := setup(t, options{urls: map[int]string{1: based.URL + "/base/"}}, plain, based)
			header := http.Header{
				"Connection":          {"keep-alive, X-Hop-Listed"},
				"X-Hop-Listed":        {"secret"},
				"Keep-Alive":          {"timeout=5"},
				"Proxy-Authorization": {"Basic c2VjcmV0"},
				"Te":                  {"trailers"},
				"Upgrade":             {"h2c"},
				"Accept-Encoding":     {"br"},
				"X-Forwarded-For":     {"10.0.0.1"},
				"X-Forwarded-Host":    {"forged.example"},
				"X-Forwarded-Proto":   {"https"},
				"Forwarded":           {"for=10.0.0.1"},
				"X-Real-Ip":           {"10.0.0.1"},
				"Cookie":              {"session=client"},
				"X-Custom":            {"not listed"},
				"Authorization":       {"Bearer client-token"},
				"Expect":              {"100-continue"},
				"Accept":              {"application/json"},
				"X-Request-Id":        {"req-1"},
				"Traceparent":         {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
			}
			body := ""
			if method == "POST" {
				body = `{"query":"x"}`
			}
			rec := rig.do(method, "/fanout/api/v1/a%2Fb?q=a%20b&n=1", body, header)
			expect(t, rec, 200, "2/2", "")
			for i, wantPath := range []string{"/api/v1/a%2Fb", "/base/api/v1/a%2Fb"} {
				got := rig.backends[i].lastRequest()
				if got.method != method || got.path != wantPath || got.query != "q=a%20b&n=1" || got.body != body {
					t.Errorf("backend %d saw %s %s?%s body %q; want %s %s?q=a%%20b&n=1 body %q",
						i, got.method, got.path, got.query, got.body, method, wantPath, body)
				}
				for _, dropped := range []string{"X-Hop-Listed", "Keep-Alive", "Proxy-Authorization", "Te", "Upgrade", "Expect",
					"Forwarded", "X-Real-Ip", "Cookie", "X-Custom", "Authorization"} {
					if v, ok := got.header[dropped]; ok {
						t.Errorf("backend %d got the client's %s: %q", i, dropped, v)
					}
				}
				// Set afresh from the request probegate received, never
				// taken from what the client claims.
				for name, want := range map[string]string{"X-Forwarded-For": "192.0.2.7", "X-Forwarded-Host": "example.com", "X-Forwarded-Proto": "http"} {
					if v := got.header.Values(name); len(v) != 1 || v[0] != want {
						t.Errorf("backend %d %s %q; want %q", i, name, v, want)
					}
				}
				for name, want := range map[string]string{"Accept": "application/json", "X-Request-Id": "req-1", "Traceparent": header.Get("Traceparent")} {
					if got.header.Get(name) != want {
						t.Errorf("backend %d lost the listed header %s: %v", i, name, got.header)
					}
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

// TestFanoutAuthorizationNeverDisplacesProbegatesCredentials: the client's
// Authorization reaches a backend only when fanout.forward_headers lists
// it, and never a backend whose http_client_config authenticates: that
// backend gets probegate's own credentials.
func TestFanoutAuthorizationNeverDisplacesProbegatesCredentials(t *testing.T) {
	for _, c := range []struct {
		name         string
		listed       bool
		backendCreds bool
		want         string
	}{
		{"not listed", false, false, ""},
		{"listed", true, false, "Bearer client-token"},
		{"listed, backend authenticates", true, true, "Basic " + basicAuth("probegate", "backend-secret")},
		{"not listed, backend authenticates", false, true, "Basic " + basicAuth("probegate", "backend-secret")},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := serve(t, answer(200, `[]`))
			o := options{}
			if c.listed {
				o.fanout.ForwardHeaders = append(config.DefaultForwardHeaders(), "Authorization")
			}
			if c.backendCreds {
				o.clientConfig = &config.HTTPClientConfig{BasicAuth: &commoncfg.BasicAuth{Username: "probegate", Password: "backend-secret"}}
			}
			rig := setup(t, o, b)
			expect(t, rig.do("GET", "/fanout/q", "", http.Header{"Authorization": {"Bearer client-token"}}), 200, "1/1", "[]")
			if got := b.lastRequest().header.Get("Authorization"); got != c.want {
				t.Errorf("backend got Authorization %q; want %q", got, c.want)
			}
		})
	}
}

func basicAuth(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// TestFanoutGzipAnswerIsMerged: probegate does not ask for compression nor
// forward the client's Accept-Encoding, but a backend that gzips anyway
// still contributes; one that announces gzip and sends garbage does not.
func TestFanoutGzipAnswerIsMerged(t *testing.T) {
	zipped := gzipped(t, []byte(`["zipped"]`))
	gzipAnswer := func(body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(body)
		}
	}
	rig := setup(t, options{},
		serve(t, gzipAnswer(zipped)), serve(t, gzipAnswer([]byte(`["not gzip"]`))))
	rec := rig.do("GET", "/fanout/q", "", http.Header{"Accept-Encoding": {"br"}})
	expect(t, rec, 200, "1/2", `["zipped"]`)
	if ae := rig.backends[0].lastRequest().header.Get("Accept-Encoding"); ae == "br" {
		t.Errorf("the backend got the client's Accept-Encoding %q", ae)
	}
	if got := rig.errors(1, traffic.InvalidBody); got != 1 {
		t.Errorf("invalid_body errors of the false gzip backend %d; want 1", got)
	}
}

func TestFanoutBackendsThatDoNotContribute(t *testing.T) {
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		dead    bool
		reason  traffic.Reason
	}{
		{"5xx", answer(503, `["x"]`), false, traffic.HTTP5xx},
		{"501", answer(501, `["x"]`), false, traffic.HTTP5xx},
		{"429", answer(429, `["x"]`), false, traffic.HTTP429},
		{"redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }, false, traffic.HTTP3xx},
		{"object", answer(200, `{"a":1}`), false, traffic.InvalidBody},
		{"html", answer(200, `<html></html>`), false, traffic.InvalidBody},
		{"empty", answer(200, ``), false, traffic.InvalidBody},
		{"connection refused", nil, true, traffic.Transport},
		{"connection reset", func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}, false, traffic.Transport},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := options{}
			bad := serve(t, c.handler)
			if c.dead {
				opts.urls = map[int]string{1: deadport.URL(t)}
			}
			rig := setup(t, opts, serve(t, answer(200, `[1]`)), bad)
			rec := rig.do("GET", "/fanout/q", "", nil)
			expect(t, rec, 200, "1/2", `[1]`)
			for _, r := range traffic.Reasons() {
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

func TestFanoutSkipsDownBackendButCountsItConfigured(t *testing.T) {
	rig := healthyThree(t)
	feed(rig.backend(1), health.StatusResult(503), 3)
	rec := rig.do("GET", "/fanout/q", "", nil)
	expect(t, rec, 200, "2/3", `[0,2]`)
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
	hang := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-time.After(time.Minute):
		}
	})
	rig := setup(t, options{fanout: config.Fanout{Timeout: model.Duration(200 * time.Millisecond)}},
		serve(t, answer(200, `[0]`)), hang, serve(t, answer(200, `[2]`)))

	start := time.Now()
	rec := rig.do("GET", "/fanout/q", "", nil)
	elapsed := time.Since(start)
	expect(t, rec, 200, "2/3", `[0,2]`)
	// The bound is loose on purpose: the hang lasts a minute.
	if elapsed > 10*time.Second {
		t.Errorf("round took %v with a 200ms timeout", elapsed)
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging backend's request was never cancelled")
	}
	if got := rig.errors(1, traffic.Timeout); got != 1 {
		t.Errorf("timeout errors of b1 = %d; want 1", got)
	}

	feed(rig.backend(1), health.TimeoutResult("probe timed out"), 3)
	rec = rig.do("GET", "/fanout/q", "", nil)
	expect(t, rec, 200, "2/3", `[0,2]`)
	if hits := hang.hits.Load(); hits != 1 {
		t.Errorf("the hanging backend got %d requests; want only the one before it was down", hits)
	}
}

func TestFanoutFailOpenSendsToAll(t *testing.T) {
	rig := healthyThree(t)
	for i := range 3 {
		feed(rig.backend(i), health.StatusResult(503), 3)
	}
	if _, _, _, failOpen := rig.pool.Selection(); !failOpen {
		t.Fatal("the pool did not fail open with every backend down")
	}
	rec := rig.do("GET", "/fanout/q", "", nil)
	expect(t, rec, 200, "3/3", `[0,1,2]`)
	for i, b := range rig.backends {
		if hits := b.hits.Load(); hits != 1 {
			t.Errorf("b%d got %d requests; want 1", i, hits)
		}
	}
}

func TestFanoutRelaysFirst4xxWhenNobodyContributed(t *testing.T) {
	refusal := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("X-Detail", body)
			w.Header().Set("X-Backends", "9/9")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	// b1's 400 comes after b2's 404 in time but first in config order.
	refused := make(chan struct{})
	rig := setup(t, options{},
		serve(t, answer(503, `down`)),
		serve(t, after(refused, nil, refusal(400, `{"error":"bad query"}`))),
		serve(t, after(nil, refused, refusal(404, `{"error":"no such thing"}`))),
	)
	rec := rig.do("GET", "/fanout/q?bad", "", nil)
	expect(t, rec, 400, "0/3", `{"error":"bad query"}`)
	if rec.Header().Get("Content-Type") != "application/problem+json" || rec.Header().Get("X-Detail") != "" {
		t.Errorf("relayed headers %v; want the first 4xx backend's Content-Type and nothing else of its own", rec.Header())
	}
	if got := rig.counters(); got != [3]float64{1, 1, 1} {
		t.Errorf("requests, partial, failed = %v; want [1 1 1]", got)
	}
	if rig.errors(1, traffic.HTTP4xx) != 1 || rig.errors(2, traffic.HTTP4xx) != 1 {
		t.Error("the 4xx answers were not counted as http_4xx")
	}

	// A 4xx loses to any contribution.
	rig = setup(t, options{},
		serve(t, refusal(400, `bad`)), serve(t, answer(200, `[7]`)))
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/2", `[7]`)

	// 429 is the backend's capacity, not the client's query: not relayed.
	rig = setup(t, options{}, serve(t, answer(429, `slow down`)))
	expect(t, rig.do("GET", "/fanout/q", "", nil), 502, "0/1", "")
}

func TestFanoutNobodyAnsweredIs502WithJSON(t *testing.T) {
	rig := setup(t, options{urls: map[int]string{0: deadport.URL(t)}},
		serve(t, nil), serve(t, answer(503, `down`)))
	rec := rig.do("GET", "/fanout/q", "", nil)
	expect(t, rec, 502, "0/2", "")
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

	empty := setup(t, options{})
	rec = empty.do("GET", "/fanout/q", "", nil)
	expect(t, rec, 502, "0/0", "")
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
	member := gzipped(t, append([]byte("["), make([]byte, 1<<20-1)...))
	bomb := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		for range huge / (1 << 20) {
			if _, err := w.Write(member); err != nil {
				return
			}
		}
	}
	rig := setup(t, options{fanout: config.Fanout{MaxResponseBytes: limit}},
		serve(t, stream(false)), serve(t, answer(200, `[1]`)),
		serve(t, stream(true)), serve(t, bomb))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec := rig.do("GET", "/fanout/q", "", nil)
	runtime.ReadMemStats(&after)
	expect(t, rec, 200, "1/4", `[1]`)
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
		if got := rig.errors(i, traffic.TooLarge); got != 1 {
			t.Errorf("too_large errors of b%d = %d; want 1", i, got)
		}
	}
}

func TestFanoutRequestBodyLimit(t *testing.T) {
	echo := serve(t, answer(200, `[]`))
	rig := setup(t, options{fanout: config.Fanout{MaxRequestBytes: 16}}, echo)
	rec := rig.do("POST", "/fanout/q", strings.Repeat("x", 17), nil)
	expect(t, rec, http.StatusRequestEntityTooLarge, "0/1", "")
	if !strings.Contains(rec.Body.String(), "max_request_bytes") {
		t.Errorf("413 body %q does not name the limit", rec.Body.String())
	}
	if echo.hits.Load() != 0 {
		t.Error("a body over the limit reached the backend")
	}
	expect(t, rig.do("POST", "/fanout/q", strings.Repeat("x", 16), nil), 200, "1/1", `[]`)
	if got := echo.lastRequest().body; got != strings.Repeat("x", 16) {
		t.Errorf("backend got body %q", got)
	}
	if got := rig.counters(); got != [3]float64{1, 0, 0} {
		t.Errorf("requests, partial, failed = %v; want only the accepted round counted", got)
	}
}

func TestFanoutHEAD(t *testing.T) {
	rig := setup(t, options{},
		serve(t, answer(200, `[1]`)), serve(t, answer(503, ``)))
	rec := rig.do("HEAD", "/fanout/q", "", nil)
	expect(t, rec, 200, "1/2", "")
	if rec.Body.Len() != 0 || rig.backends[0].lastRequest().method != "HEAD" {
		t.Errorf("HEAD: body %q, backend saw %s", rec.Body.String(), rig.backends[0].lastRequest().method)
	}
}

func TestFanoutMethodNotAllowed(t *testing.T) {
	b := serve(t, answer(200, `[]`))
	rig := setup(t, options{}, b)
	rec := rig.do("PUT", "/fanout/q", "x", nil)
	expect(t, rec, http.StatusMethodNotAllowed, "0/1", "")
	if rec.Header().Get("Allow") != "GET, HEAD, POST" || b.hits.Load() != 0 {
		t.Errorf("Allow %q, backend hits %d", rec.Header().Get("Allow"), b.hits.Load())
	}
}

func TestFanoutUpdate(t *testing.T) {
	rig := setup(t, options{}, serve(t, answer(200, "[1]")))
	rig.fanout.Update(config.Fanout{Enabled: true, Merge: "ndjson"})
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/1", "[1]\n")
	rig.fanout.Update(config.Fanout{Enabled: true, Merge: "xml", Timeout: model.Duration(time.Second)})
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/1", "[1]\n")
	if got := rig.fanout.settings.Load().fanout.Timeout; got != model.Duration(time.Second) {
		t.Errorf("the rest of the update was not applied: timeout %v", got)
	}
	if rig.logs.count("level=error", "xml") != 1 {
		t.Errorf("the unknown merge format was not logged:\n%s", rig.logs)
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
	rig := setup(t, options{fanout: config.Fanout{Timeout: model.Duration(time.Minute)}, passive: passive},
		serve(t, hang), serve(t, hang), serve(t, hang))
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
	// A client that went away is a local fault: counted, never charged
	// to the backend's health.
	for i := range 3 {
		want := [traffic.NumReasons]uint64{}
		want[traffic.Local] = 1
		if s := rig.backend(i).Snapshot(); s.Traffic.Errors != want || s.Health.Ejected {
			t.Errorf("b%d traffic %+v ejected %v after a client hang-up; want one local error", i, s.Traffic, s.Health.Ejected)
		}
	}
	for i := range 3 {
		if c := rig.window(t, i); c.requests() != 0 {
			t.Errorf("b%d passive window %+v; a cancelled request must count as neither", i, c)
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
		{"200", answer(200, `[1]`), false, false},
		{"200 not an array", answer(200, `{}`), false, false},
		{"302", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/x", http.StatusFound) }, false, false},
		{"404", answer(404, ``), false, false},
		{"501", answer(501, ``), false, false},
		{"500", answer(500, ``), false, true},
		{"503", answer(503, ``), false, true},
		{"429", answer(429, ``), false, true},
		{"timeout", unanswered, false, true},
		{"connection refused", nil, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := options{
				fanout:  config.Fanout{Timeout: model.Duration(100 * time.Millisecond)},
				passive: config.PassiveHealth{Enabled: true, Window: model.Duration(time.Minute), MaxFailures: 100},
			}
			if c.dead {
				opts.urls = map[int]string{0: deadport.URL(t)}
			}
			rig := setup(t, opts, serve(t, c.handler))
			rig.do("GET", "/fanout/q", "", nil)
			want := windowCounts{successes: 1}
			if c.failed {
				want = windowCounts{failures: 1}
			}
			if got := rig.window(t, 0); got != want {
				t.Errorf("window %+v; want %+v", got, want)
			}
		})
	}
}

// passiveRig is three backends whose probe path says ok; b0 fails
// every fan-out request with 503. Probes are on (successes 3) and every
// backend has been probed once, so all are healthy.
func passiveRig(t *testing.T, clock *testclock.Clock) *rig {
	t.Helper()
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(30 * time.Second), MaxFailures: 3, MaxEjectedPercent: 50}
	rig := setup(t, options{passive: passive, successes: 3, now: clock.Now},
		serve(t, answer(503, `overloaded`)),
		serve(t, answer(200, `[1]`)),
		serve(t, answer(200, `[2]`)),
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
	clock := newClock()
	rig := passiveRig(t, clock)
	failing := rig.backend(0)
	for round := 1; round <= 2; round++ {
		expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "2/3", `[1,2]`)
		if h := failing.Health(); !h.InService() {
			t.Fatalf("b0 ejected after %d failures; want at max_failures 3", round)
		}
	}
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "2/3", `[1,2]`)
	s := failing.Snapshot()
	if s.Health.InService() || !s.Health.Ejected || s.Traffic.Ejections != 1 || s.Transitions[health.StateUnhealthy] != 1 {
		t.Fatalf("after 3 failures: health %+v, ejections %d, transitions to unhealthy %d; want ejected once",
			s.Health, s.Traffic.Ejections, s.Transitions[health.StateUnhealthy])
	}
	if n := rig.logs.count(`msg="Backend ejected by passive health"`, "backend=b0", "failures=3", "requests=3", "readmission=probes"); n != 1 {
		t.Errorf("ejection logged %d times; want once:\n%s", n, rig.logs)
	}

	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "2/3", `[1,2]`)
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
	clock := newClock()
	rig := passiveRig(t, clock)
	for range 3 {
		rig.do("GET", "/fanout/q", "", nil)
	}
	if rig.backend(0).Health().InService() {
		t.Fatal("not ejected after max_failures")
	}
	clock.Advance(time.Hour)
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "2/3", `[1,2]`)
	if h := rig.backend(0).Health(); h.InService() || rig.backends[0].hits.Load() != 3 {
		t.Errorf("an hour after the ejection: %+v, %d requests; want still out", h, rig.backends[0].hits.Load())
	}
}

// TestPassiveHealthNeverEjectsMoreThanMaxEjectedPercent: however many
// backends fail, and however many rounds see it at once, no more than
// max_ejected_percent of the pool is ejected.
func TestPassiveHealthNeverEjectsMoreThanMaxEjectedPercent(t *testing.T) {
	for _, c := range []struct {
		backends    int
		percent     float64
		wantEjected int
	}{{3, 50, 2}, {4, 50, 2}, {1, 40, 0}, {1, 100, 1}, {3, 0, 0}} {
		t.Run(fmt.Sprintf("%d failing backends %v%%", c.backends, c.percent), func(t *testing.T) {
			passive := config.PassiveHealth{Enabled: true, Window: model.Duration(time.Minute), MaxFailures: 2, MaxEjectedPercent: c.percent}
			var backends []*backend
			for range c.backends {
				backends = append(backends, serve(t, answer(503, ``)))
			}
			// One backend that succeeds, so that the failures are charged
			// (a round where all fail charges nobody).
			backends = append(backends, serve(t, answer(200, `[]`)))
			rig := setup(t, options{passive: passive}, backends...)
			rig.judged(c.backends)
			// Rounds run concurrently, as well as the backends of each:
			// counting the ejected and ejecting one more is one step.
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for range 5 {
						rig.do("GET", "/fanout/q", "", nil)
					}
				})
			}
			wg.Wait()
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
			answer(503, ``)(w, r)
			return
		}
		answer(200, `[0]`)(w, r)
	}
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(time.Minute), MinSuccessRatio: 0.9, MinRequests: 10, MaxEjectedPercent: 50}
	rig := setup(t, options{passive: passive},
		serve(t, alternating), serve(t, answer(200, `[1]`)))
	rig.judged(1)
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
	clock := newClock()
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(window), MaxFailures: 2, MaxEjectedPercent: 50}
	var failing atomic.Bool
	failing.Store(true)
	flaky := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			answer(503, ``)(w, r)
			return
		}
		answer(200, `[0]`)(w, r)
	})
	rig := setup(t, options{passive: passive, unprobed: map[int]bool{0: true}, now: clock.Now},
		flaky, serve(t, answer(200, `[1]`)))
	rig.judged(1)
	rig.do("GET", "/fanout/q", "", nil)
	rig.do("GET", "/fanout/q", "", nil)
	if h := rig.backend(0).Health(); !h.Ejected {
		t.Fatalf("not ejected after max_failures: %+v", h)
	}
	ejectedAt := clock.Now()
	failing.Store(false)

	clock.Set(ejectedAt.Add(window - time.Nanosecond))
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/2", `[1]`)
	if flaky.hits.Load() != 2 {
		t.Errorf("the ejected backend got traffic before the window elapsed")
	}
	clock.Set(ejectedAt.Add(window))
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "2/2", `[0,1]`)
	if h := rig.backend(0).Health(); h.Ejected || h.State != health.StateUnknown {
		t.Errorf("after the window: %+v; want readmitted to unknown", h)
	}
	if n := rig.logs.count(`msg="Backend readmitted by passive health`, "backend=b0"); n != 1 {
		t.Errorf("readmission logged %d times; want once:\n%s", n, rig.logs)
	}
	if got := rig.backend(0).Snapshot().Transitions[health.StateUnknown]; got != 1 {
		t.Errorf("transitions to unknown %d; want 1", got)
	}
}

// TestPassiveHealthReadmitsProbeUnsupportedBackendWhenWindowElapsed: a
// backend whose probe path refuses never gets an ok probe, so, like one
// that is not probed, the elapsed window readmits it rather than nothing.
func TestPassiveHealthReadmitsProbeUnsupportedBackendWhenWindowElapsed(t *testing.T) {
	const window = 30 * time.Second
	clock := newClock()
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(window), MaxFailures: 2, MaxEjectedPercent: 50}
	rig := setup(t, options{passive: passive, now: clock.Now},
		serve(t, answer(503, ``)), serve(t, answer(200, `[1]`)))
	feed(rig.backend(0), health.StatusResult(404), 1)
	rig.judged(1)
	rig.do("GET", "/fanout/q", "", nil)
	rig.do("GET", "/fanout/q", "", nil)
	if h := rig.backend(0).Health(); !h.Ejected {
		t.Fatalf("not ejected after max_failures: %+v", h)
	}
	if n := rig.logs.count(`msg="Backend ejected by passive health"`, "from=probe_unsupported", "readmission=window"); n != 1 {
		t.Errorf("ejection logged %d times with readmission=window; want once:\n%s", n, rig.logs)
	}
	feed(rig.backend(0), health.StatusResult(404), 5)
	clock.Advance(window)
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/2", `[1]`)
	if h := rig.backend(0).Health(); h.Ejected || !h.InService() || rig.backends[0].hits.Load() != 3 {
		t.Errorf("after the window: %+v, %d requests; want readmitted and asked again", h, rig.backends[0].hits.Load())
	}
}

func TestPassiveHealthDisabledNeverEjects(t *testing.T) {
	rig := setup(t, options{passive: config.PassiveHealth{Window: model.Duration(time.Minute), MaxFailures: 1, MaxEjectedPercent: 100}},
		serve(t, answer(503, ``)), serve(t, answer(200, `[1]`)))
	for range 5 {
		rig.do("GET", "/fanout/q", "", nil)
	}
	if h := rig.backend(0).Health(); h.Ejected || !h.InService() {
		t.Errorf("ejected with passive health off: %+v", h)
	}
	if got := rig.errors(0, traffic.HTTP5xx); got != 5 {
		t.Errorf("http_5xx errors %d; want 5 (counted with passive health off too)", got)
	}
}

// ejectUnprobed is a rig of an unprobed backend (failing) that fails every
// fan-out request and a healthy one, with passive health ejecting at two
// failures in window. It runs the two rounds that eject the first backend,
// then closes the idle connections: in a synctest bubble time stands still
// while a connection waits for the network.
func ejectUnprobed(t *testing.T, window time.Duration, failing, healthy *backend, beforeEjection func(*rig)) *rig {
	t.Helper()
	passive := config.PassiveHealth{Enabled: true, Window: model.Duration(window), MaxFailures: 2, MaxEjectedPercent: 50}
	r := setup(t, options{passive: passive, unprobed: map[int]bool{0: true}}, failing, healthy)
	r.judged(1)
	beforeEjection(r)
	r.do("GET", "/fanout/q", "", nil)
	r.do("GET", "/fanout/q", "", nil)
	if h := r.backend(0).Health(); !h.Ejected {
		t.Fatalf("not ejected after max_failures: %+v", h)
	}
	r.closeIdle()
	return r
}

// TestPoolRunReadmitsWithoutTraffic: a backend with probing disabled that
// passive health ejected comes back once the window has elapsed, to the
// nanosecond, even though no fan-out round comes to notice it, so the
// readiness budget of an idle pool recovers. Run is idle (nothing due)
// when the ejection happens: the ejection has to wake it. The backends are
// real, so they are started outside the bubble; the time the test waits
// is the bubble's.
func TestPoolRunReadmitsWithoutTraffic(t *testing.T) {
	failing, healthy := serve(t, answer(503, ``)), serve(t, answer(200, `[1]`))
	watchdog(t, failing, healthy)
	synctest.Test(t, func(t *testing.T) {
		const window = 30 * time.Second
		rig := ejectUnprobed(t, window, failing, healthy, func(r *rig) { r.runReadmission(t) })
		// Time has not moved since the ejection: only the network was
		// waited for.
		b := rig.backend(0)
		time.Sleep(window - time.Nanosecond)
		synctest.Wait()
		if h := b.Health(); !h.Ejected {
			t.Fatalf("readmitted %v after the ejection with a %v window: %+v", window-time.Nanosecond, window, h)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if h := b.Health(); h.Ejected || h.State != health.StateUnknown || !h.InService() {
			t.Fatalf("when the %v window elapsed with no traffic: %+v; want readmitted to unknown", window, h)
		}
		if hits := failing.hits.Load(); hits != 2 {
			t.Errorf("the backend got %d requests; want only the 2 before its ejection", hits)
		}
		if got := rig.pool.Budget().CurrentHealthy; got != 2 {
			t.Errorf("readiness budget current_healthy %d; want 2 after the readmission", got)
		}
		if n := rig.logs.count(`msg="Backend readmitted by passive health`, "backend=b0"); n != 1 {
			t.Errorf("readmission logged %d times; want once:\n%s", n, rig.logs)
		}
		// Nothing is due any more: Run sleeps until the next ejection
		// instead of scanning again.
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := rig.logs.count(`msg="Backend readmitted by passive health`); n != 1 {
			t.Errorf("%d readmissions logged an hour later; want still one:\n%s", n, rig.logs)
		}
	})
}

// TestPoolRunRescansWhenReloadShortensWindow: Run sleeps until the readmission
// due under the window of the ejection; a reload to a shorter window has to
// wake it, or the backend stays out for the old window.
func TestPoolRunRescansWhenReloadShortensWindow(t *testing.T) {
	failing, healthy := serve(t, answer(503, ``)), serve(t, answer(200, `[1]`))
	watchdog(t, failing, healthy)
	synctest.Test(t, func(t *testing.T) {
		rig := ejectUnprobed(t, time.Hour, failing, healthy, func(r *rig) { r.runReadmission(t) })
		b := rig.backend(0)
		// Run has taken the ejection's wake-up and sleeps until the
		// hour is up, so that only the reload can wake it.
		synctest.Wait()
		const shorter = 200 * time.Millisecond
		s := rig.settings
		s.Passive.Window = model.Duration(shorter)
		if err := rig.pool.Apply(rig.targets, s); err != nil {
			t.Fatal(err)
		}
		time.Sleep(shorter - time.Nanosecond)
		synctest.Wait()
		if !b.Health().Ejected {
			t.Fatalf("readmitted before the reloaded %v window elapsed", shorter)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if h := b.Health(); h.Ejected {
			t.Fatalf("still ejected when a reload's %v window elapsed with no traffic: %+v", shorter, h)
		}
		if hits := failing.hits.Load(); hits != 2 {
			t.Errorf("the backend got %d requests; want only the 2 before its ejection", hits)
		}
	})
}

// TestPathsReachTheBackendsAsSent: /fanout itself and paths with
// empty segments reach the backends, under their base path, as the client
// sent them, and so do segments that merely contain dots.
func TestPathsReachTheBackendsAsSent(t *testing.T) {
	for _, c := range []struct{ target, want string }{
		{"/fanout", ""},
		{"/fanout/", "/"},
		{"/fanout?q=1", "?q=1"},
		{"/fanout/a//b", "/a//b"},
		{"/fanout//a", "//a"},
		{"/fanout/a..b/.../.x/c.", "/a..b/.../.x/c."},
		{"/fanout/a%2Fb", "/a%2Fb"},
	} {
		t.Run(c.target, func(t *testing.T) {
			plain := serve(t, answer(200, `[]`))
			based := serve(t, answer(200, `[]`))
			rig := setup(t, options{urls: map[int]string{1: based.URL + "/base"}}, plain, based)
			expect(t, rig.do("GET", c.target, "", nil), 200, "2/2", "[]")
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

// TestFanoutRefusesPathsLeavingTheBasePath: a "." or ".." segment (also
// "..;x"), however deeply encoded, a backslash or a NUL could take the
// request out of a backend URL's base path or be read differently behind
// it, and a path that is not under /fanout/ as sent has no backend path at
// all: each is refused with 400, JSON and X-Backends, and reaches no
// backend.
func TestFanoutRefusesPathsLeavingTheBasePath(t *testing.T) {
	for _, target := range []string{
		"/fanout/..",
		"/fanout/../x",
		"/fanout/a/../../x",
		"/fanout/a/%2e%2e/b",
		"/fanout/a/.%2E/b",
		"/fanout/a%2F..%2Fb",
		"/fanout/..%5Cx",
		"/fanout/./x",
		"/fanout/a/%2e/b",
		"/fanout/..;/x",
		"/fanout/a/..;jsessionid=1/b",
		"/fanout/%252e%252e/x",
		"/fanout/a%5Cb",
		"/fanout/a%00b",
		"/fanout%2F..",
		"/fanout%2Fx",
		"/fanou%74/x",
	} {
		t.Run(target, func(t *testing.T) {
			b := serve(t, answer(200, `[]`))
			rig := setup(t, options{urls: map[int]string{0: b.URL + "/base"}}, b)
			rec := rig.do("GET", target, "", nil)
			expect(t, rec, http.StatusBadRequest, "0/1", "")
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
