package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/probegate/probegate/internal/testclock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newFakeClock is a hand-moved clock at a fixed start.
func newFakeClock() *testclock.Clock { return testclock.New(time.Unix(1_700_000_000, 0)) }

// readyResponse is a decoded /ready answer.
type readyResponse struct {
	code   int
	header http.Header
	body   healthJSON
	raw    string
}

func getReady(t *testing.T, g *Gate, query string) readyResponse {
	t.Helper()
	rec := httptest.NewRecorder()
	g.ReadyHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ready"+query, nil))
	resp := readyResponse{code: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp.body); err != nil {
		t.Fatalf("/ready%s body %q is not JSON: %v", query, resp.raw, err)
	}
	return resp
}

func pass(context.Context) error { return nil }

func TestRegisterPanicsOnWiringMistakes(t *testing.T) {
	for name, register := range map[string]func(g *Gate){
		"duplicate name": func(g *Gate) { g.Register("db", pass); g.Register("db", pass) },
		"duplicate across both registration functions": func(g *Gate) {
			g.Register("db", pass)
			g.RegisterWithOutput("db", func(context.Context) (string, error) { return "", nil })
		},
		"empty name":   func(g *Gate) { g.Register("", pass) },
		"nil function": func(g *Gate) { g.Register("db", nil) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("registration did not panic")
				}
			}()
			register(New(Options{}))
		})
	}
}

func TestRegisterDistinctNamesDoesNotPanic(t *testing.T) {
	g := New(Options{})
	g.Register("a", pass)
	g.Register("b", pass)
	if got := len(getReady(t, g, "").body.Checks); got != 2 {
		t.Fatalf("/ready reports %d checks, want 2", got)
	}
}

func TestReadyBody(t *testing.T) {
	g := New(Options{})
	g.RegisterWithOutput("budget", func(context.Context) (string, error) { return "expected=3 current_healthy=3", nil })
	g.Register("db", pass)
	resp := getReady(t, g, "")
	if resp.code != http.StatusOK {
		t.Errorf("status %d, want 200", resp.code)
	}
	if ct := resp.header.Get("Content-Type"); ct != "application/health+json" {
		t.Errorf("Content-Type %q, want application/health+json", ct)
	}
	want := `{"status":"pass","draining":false,"checks":{"budget":{"status":"pass","output":"expected=3 current_healthy=3"},"db":{"status":"pass","output":""}}}` + "\n"
	if resp.raw != want {
		t.Errorf("body\n%s\nwant\n%s", resp.raw, want)
	}
}

func TestReadyWithoutChecksPasses(t *testing.T) {
	resp := getReady(t, New(Options{}), "")
	if resp.code != http.StatusOK || resp.body.Status != "pass" || len(resp.body.Checks) != 0 {
		t.Fatalf("got %d %s, want 200 with status pass and no checks", resp.code, resp.raw)
	}
}

func TestFailingCheckFailsReadyWithItsError(t *testing.T) {
	g := New(Options{})
	g.Register("db", pass)
	g.RegisterWithOutput("budget", func(context.Context) (string, error) {
		return "ignored", errors.New("expected=3 current_healthy=0 desired_healthy=1")
	})
	resp := getReady(t, g, "")
	if resp.code != http.StatusServiceUnavailable || resp.body.Status != "fail" {
		t.Fatalf("got %d %s, want 503 with status fail", resp.code, resp.raw)
	}
	if c := resp.body.Checks["budget"]; c.Status != "fail" || c.Output != "expected=3 current_healthy=0 desired_healthy=1" {
		t.Errorf("budget check %+v, want fail with the error's text", c)
	}
	if c := resp.body.Checks["db"]; c.Status != "pass" {
		t.Errorf("db check %+v, want pass", c)
	}
}

// TestWarningCheckPassesWithStatusWarn: a check that returns a warning,
// also wrapped, leaves /ready 200 with overall status pass, and shows
// status "warn" with the warning's text as its output; a failing check
// beside it still fails /ready.
func TestWarningCheckPassesWithStatusWarn(t *testing.T) {
	g := New(Options{})
	g.Register("budget", func(context.Context) error {
		return Warn("no live peer's budget holds either: staying ready")
	})
	g.Register("wrapped", func(context.Context) error {
		return fmt.Errorf("peers: %w", Warn("wrapped warning"))
	})
	g.Register("db", pass)
	resp := getReady(t, g, "")
	if resp.code != http.StatusOK || resp.body.Status != "pass" || !g.Ready(t.Context()) {
		t.Fatalf("got %d %s, want 200 with status pass", resp.code, resp.raw)
	}
	if c := resp.body.Checks["budget"]; c.Status != "warn" || c.Output != "no live peer's budget holds either: staying ready" {
		t.Errorf("budget check %+v, want warn with the warning's text", c)
	}
	if c := resp.body.Checks["wrapped"]; c.Status != "warn" || c.Output != "wrapped warning" {
		t.Errorf("wrapped check %+v, want warn with the warning's text", c)
	}
	if c := resp.body.Checks["db"]; c.Status != "pass" {
		t.Errorf("db check %+v, want pass", c)
	}

	g = New(Options{})
	g.Register("budget", func(context.Context) error { return Warn("warned") })
	g.Register("db", func(context.Context) error { return errors.New("down") })
	if resp := getReady(t, g, ""); resp.code != http.StatusServiceUnavailable || resp.body.Checks["budget"].Status != "warn" {
		t.Errorf("a warning beside a failure: got %d %s, want 503 with the warning kept", resp.code, resp.raw)
	}
}

func TestPanickingCheckFailsOnlyItself(t *testing.T) {
	g := New(Options{})
	g.Register("db", pass)
	g.Register("buggy", func(context.Context) error { panic("index out of range [3]") })
	for range 2 { // and the gate keeps answering afterwards
		resp := getReady(t, g, "")
		if resp.code != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503", resp.code)
		}
		if c := resp.body.Checks["buggy"]; c.Status != "fail" || !strings.Contains(c.Output, "panic: index out of range [3]") {
			t.Errorf("buggy check %+v, want fail naming the panic", c)
		}
		if c := resp.body.Checks["db"]; c.Status != "pass" {
			t.Errorf("db check %+v, want pass: a panic elsewhere must not touch it", c)
		}
	}
}

// TestCheckTimeout runs on synthetic time: the checks that outlive the
// timeout hold their goroutines, and the 50ms pass as soon as every
// goroutine waits.
func TestCheckTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := make(chan struct{})
		defer close(stuck)
		g := New(Options{CheckTimeout: 50 * time.Millisecond})
		g.Register("ignores_context", func(context.Context) error { <-stuck; return nil })
		g.Register("honours_context", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		g.Register("fast", pass)
		start := time.Now()
		resp := getReady(t, g, "")
		if took := time.Since(start); took != 50*time.Millisecond {
			t.Errorf("/ready answered after %v, want the 50ms check timeout", took)
		}
		if resp.code != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503", resp.code)
		}
		for _, name := range []string{"ignores_context", "honours_context"} {
			if c := resp.body.Checks[name]; c.Status != "fail" || !strings.HasPrefix(c.Output, "timed out after 50ms") {
				t.Errorf("%s check %+v, want fail with output starting \"timed out after 50ms\"", name, c)
			}
		}
		if c := resp.body.Checks["fast"]; c.Status != "pass" {
			t.Errorf("fast check %+v, want pass", c)
		}
	})
}

func TestCheckTimeoutDefaultsToCheckInterval(t *testing.T) {
	if g := New(Options{CheckInterval: 3 * time.Second}); g.timings.Load().checkTimeout != 3*time.Second {
		t.Errorf("check timeout %s, want the check interval 3s", g.timings.Load().checkTimeout)
	}
	if tm := New(Options{}).timings.Load(); tm.checkInterval != time.Second || tm.checkTimeout != time.Second {
		t.Errorf("check interval %s and timeout %s, want 1s and 1s", tm.checkInterval, tm.checkTimeout)
	}
}

// TestConcurrentRequestsShareOneEvaluation runs in a synctest bubble, so
// that the test knows when every request is waiting.
func TestConcurrentRequestsShareOneEvaluation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const requests = 20
		clock := newFakeClock()
		// Every evaluation is stale the moment it is looked at, so only a
		// shared evaluation, not the cache, can keep the calls at one.
		g := New(Options{Now: func() time.Time { clock.Advance(time.Hour); return clock.Now() }})
		var calls atomic.Int32
		release := make(chan struct{})
		g.Register("slow", func(context.Context) error {
			calls.Add(1)
			<-release
			return nil
		})
		handler := g.ReadyHandler()
		var wg sync.WaitGroup
		codes := make([]int, requests)
		for i := range requests {
			wg.Go(func() {
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ready", nil))
				codes[i] = rec.Code
			})
		}
		// Every request waits: for an evaluation, and the check for its
		// release. Only then is the check let go.
		synctest.Wait()
		close(release)
		wg.Wait()
		if got := calls.Load(); got != 1 {
			t.Errorf("%d concurrent requests ran the check %d times, want once", requests, got)
		}
		for i, code := range codes {
			if code != http.StatusOK {
				t.Errorf("request %d: status %d, want 200", i, code)
			}
		}
	})
}

func TestResultsReusedForCheckInterval(t *testing.T) {
	clock := newFakeClock()
	g := New(Options{CheckInterval: 2 * time.Second, Now: clock.Now})
	var calls atomic.Int32
	g.Register("counted", func(context.Context) error { calls.Add(1); return nil })
	getReady(t, g, "")
	clock.Advance(2*time.Second - time.Nanosecond)
	getReady(t, g, "")
	getReady(t, g, "?exclude=other")
	if got := calls.Load(); got != 1 {
		t.Fatalf("check ran %d times within the interval, want once", got)
	}
	clock.Advance(time.Nanosecond)
	getReady(t, g, "")
	if got := calls.Load(); got != 2 {
		t.Fatalf("check ran %d times once the interval passed, want twice", got)
	}
}

func TestRegisterInvalidatesCachedEvaluation(t *testing.T) {
	g := New(Options{Now: newFakeClock().Now}) // the clock never moves
	g.Register("first", pass)
	getReady(t, g, "")
	g.Register("second", func(context.Context) error { return errors.New("down") })
	resp := getReady(t, g, "")
	if resp.code != http.StatusServiceUnavailable || resp.body.Checks["second"].Status != "fail" {
		t.Fatalf("got %d %s, want 503 including the check registered after the first evaluation", resp.code, resp.raw)
	}
}

func TestExclude(t *testing.T) {
	g := New(Options{})
	g.Register("a_down", func(context.Context) error { return errors.New("down") })
	g.Register("b_down", func(context.Context) error { return errors.New("down") })
	g.Register("c_up", pass)
	for _, tc := range []struct {
		query  string
		code   int
		checks []string
	}{
		{"", 503, []string{"a_down", "b_down", "c_up"}},
		{"?exclude=a_down", 503, []string{"b_down", "c_up"}},
		{"?exclude=a_down&exclude=b_down", 200, []string{"c_up"}},
		{"?exclude=a_down&exclude=b_down&exclude=c_up", 200, nil},
		{"?exclude=no_such_check", 503, []string{"a_down", "b_down", "c_up"}},
		{"?verbose=1", 503, []string{"a_down", "b_down", "c_up"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			resp := getReady(t, g, tc.query)
			if resp.code != tc.code {
				t.Errorf("status %d, want %d", resp.code, tc.code)
			}
			wantStatus := map[int]string{200: "pass", 503: "fail"}[tc.code]
			if resp.body.Status != wantStatus {
				t.Errorf("status field %q, want %q", resp.body.Status, wantStatus)
			}
			if len(resp.body.Checks) != len(tc.checks) {
				t.Errorf("checks %v, want exactly %v", resp.body.Checks, tc.checks)
			}
			for _, name := range tc.checks {
				if _, ok := resp.body.Checks[name]; !ok {
					t.Errorf("check %s missing from %s", name, resp.raw)
				}
			}
		})
	}
}

func TestDrainingFailsReadyAndKeepsHealth(t *testing.T) {
	g := New(Options{})
	g.Register("db", pass)
	g.beginDrain()
	resp := getReady(t, g, "")
	if resp.code != http.StatusServiceUnavailable || resp.body.Status != "fail" || !resp.body.Draining {
		t.Fatalf("got %d %s, want 503 with status fail and draining true", resp.code, resp.raw)
	}
	if resp.body.Checks["db"].Status != "pass" {
		t.Errorf("db check %+v: draining must not fail the checks themselves", resp.body.Checks["db"])
	}
	// Excluding every check does not make a draining gate ready.
	if resp := getReady(t, g, "?exclude=db"); resp.code != http.StatusServiceUnavailable || !resp.body.Draining {
		t.Errorf("with exclude: got %d %s, want 503 draining", resp.code, resp.raw)
	}
}

func TestHealthIsOKWhateverTheChecksSay(t *testing.T) {
	g := New(Options{})
	g.Register("down", func(context.Context) error { return errors.New("down") })
	g.Register("panics", func(context.Context) error { panic("boom") })
	for _, draining := range []bool{false, true} {
		if draining {
			g.beginDrain()
		}
		rec := httptest.NewRecorder()
		g.HealthHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
		if rec.Code != http.StatusOK || rec.Body.String() != "ok" {
			t.Errorf("draining=%v: /health %d %q, want 200 \"ok\"", draining, rec.Code, rec.Body.String())
		}
	}
}

func TestMethodsOtherThanGETAndHEADAreRefused(t *testing.T) {
	g := New(Options{})
	for _, h := range []http.Handler{g.HealthHandler(), g.ReadyHandler()} {
		for method, want := range map[string]int{http.MethodGet: 200, http.MethodHead: 200, http.MethodPost: 405, http.MethodDelete: 405} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, "/", nil))
			if rec.Code != want {
				t.Errorf("%s: status %d, want %d", method, rec.Code, want)
			}
		}
	}
}

func TestWrapSwitchesKeepAliveOffOnceDraining(t *testing.T) {
	g := New(Options{})
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("app")) }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if c := rec.Header().Get("Connection"); c != "" {
		t.Errorf("before the drain: Connection %q, want none", c)
	}
	g.beginDrain()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if c := rec.Header().Get("Connection"); c != "close" || rec.Body.String() != "app" {
		t.Errorf("draining: Connection %q body %q, want close and the app's answer", c, rec.Body.String())
	}
}

func TestWaiterWhoseClientLeftStopsWaiting(t *testing.T) {
	release := make(chan struct{})
	g := New(Options{})
	g.Register("slow", func(context.Context) error { <-release; return nil })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.current(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	close(release)
	// The evaluation went on for everyone else.
	if resp := getReady(t, g, ""); resp.code != http.StatusOK {
		t.Errorf("status %d, want 200", resp.code)
	}
}
