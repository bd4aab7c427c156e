package gate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"
)

// running is a Gate serving a loopback server through Run, with the drain
// triggers in the test's hands.
type running struct {
	gate    *Gate
	url     string
	signals chan os.Signal
	// finished closes when Run has returned err.
	finished chan struct{}
	err      error
	// drainStarted closes when the gate logs that the drain started,
	// after it switched to draining.
	drainStarted chan struct{}
}

// startRun serves app behind a gate with o through Run on a loopback port.
func startRun(t *testing.T, o Options, app http.Handler) *running {
	t.Helper()
	signals := make(chan os.Signal, 3)
	o.Signals = signals
	drainStarted := make(chan struct{})
	closeOnce := sync.OnceFunc(func() { close(drainStarted) })
	o.Logger = log.LoggerFunc(func(keyvals ...any) error {
		for i := 0; i+1 < len(keyvals); i += 2 {
			if msg, ok := keyvals[i+1].(string); ok && keyvals[i] == "msg" && strings.HasPrefix(msg, "Drain started") {
				closeOnce()
			}
		}
		return nil
	})
	g := New(o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/health", g.HealthHandler())
	mux.Handle("/ready", g.ReadyHandler())
	mux.Handle("/", app)
	srv := &http.Server{Handler: mux}
	r := &running{gate: g, url: "http://" + ln.Addr().String(), signals: signals, finished: make(chan struct{}), drainStarted: drainStarted}
	go func() {
		defer close(r.finished)
		r.err = g.Run(context.Background(), srv, func() error { return srv.Serve(ln) })
	}()
	t.Cleanup(func() {
		select {
		case <-r.finished:
		default:
			signals <- syscall.SIGTERM
			signals <- syscall.SIGTERM
			<-r.finished
		}
	})
	return r
}

// waitRun returns Run's result, failing the test if Run has not returned
// within a generous bound.
func (r *running) waitRun(t *testing.T) error {
	t.Helper()
	select {
	case <-r.finished:
		return r.err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s")
		return nil
	}
}

// freshGet makes a request on a new connection.
func freshGet(url string) (*http.Response, string, error) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, string(body), err
}

func okApp() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "app") })
}

func TestRunDrainWindow(t *testing.T) {
	const drain = 500 * time.Millisecond
	r := startRun(t, Options{Drain: drain}, okApp())
	cleaned := make(chan struct{})
	r.gate.OnShutdown(func(context.Context) { close(cleaned) })

	keepAlive := &http.Client{Transport: &http.Transport{}}
	defer keepAlive.CloseIdleConnections()
	get := func(path string) (*http.Response, bool) {
		t.Helper()
		reused := false
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused },
		})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url+path, nil)
		resp, err := keepAlive.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, reused
	}
	if resp, _ := get("/ready"); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("before the signal: /ready %d close=%v, want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}

	start := time.Now()
	r.signals <- syscall.SIGTERM
	select {
	case <-r.drainStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("the drain did not start within 10s of the signal")
	}
	// The connection kept alive from before the signal is not cut: it
	// carries one more request, answered normally, and then closes.
	if resp, reused := get("/app"); resp.StatusCode != http.StatusOK || !reused || !resp.Close {
		t.Errorf("draining, idle connection from before: status %d reused=%v close=%v, want 200 on the reused connection with Connection: close", resp.StatusCode, reused, resp.Close)
	}
	resp, body, err := freshGet(r.url + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	var h healthJSON
	if err := json.Unmarshal([]byte(body), &h); err != nil || resp.StatusCode != http.StatusServiceUnavailable || !h.Draining || h.Status != "fail" {
		t.Errorf("draining: /ready %d %s (%v), want 503 with draining true", resp.StatusCode, body, err)
	}
	if resp, body, err := freshGet(r.url + "/health"); err != nil || resp.StatusCode != http.StatusOK || body != "ok" {
		t.Errorf("draining: /health %v %q, want 200 ok", err, body)
	}

	if err := r.waitRun(t); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	if elapsed := time.Since(start); elapsed < drain {
		t.Errorf("Run returned %s after the signal, before the %s drain window ended", elapsed, drain)
	}
	select {
	case <-cleaned:
	default:
		t.Error("Run returned before running the cleanup callback")
	}
	if _, _, err := freshGet(r.url + "/health"); err == nil {
		t.Error("the server still accepts connections after Run returned")
	}
}

func TestRunSecondSignalEndsWindowEarly(t *testing.T) {
	r := startRun(t, Options{Drain: time.Hour}, okApp())
	r.signals <- syscall.SIGTERM
	r.signals <- syscall.SIGINT
	if err := r.waitRun(t); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
}

func TestRunContextStartsDrain(t *testing.T) {
	g := New(Options{Signals: make(chan os.Signal)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: okApp()}
	ctx, cancel := context.WithCancel(context.Background())
	cleaned := false
	g.OnShutdown(func(context.Context) { cleaned = true })
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, srv, func() error { return srv.Serve(ln) }) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context ending")
	}
	if !g.Draining() || !cleaned {
		t.Errorf("draining=%v cleaned=%v, want both", g.Draining(), cleaned)
	}
}

func TestRunShutdownTimeoutBoundsShutdown(t *testing.T) {
	hung := make(chan struct{})
	entered := make(chan struct{})
	r := startRun(t, Options{ShutdownTimeout: 100 * time.Millisecond}, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		close(entered)
		<-hung
	}))
	defer close(hung)
	inflight := make(chan error, 1)
	go func() {
		_, _, err := freshGet(r.url + "/hang")
		inflight <- err
	}()
	<-entered
	r.signals <- syscall.SIGTERM
	if err := r.waitRun(t); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	if err := <-inflight; err == nil {
		t.Error("the hung request completed, want its connection closed after the shutdown timeout")
	}
}

func TestRunReturnsServeErrorAndCleansUp(t *testing.T) {
	g := New(Options{Signals: make(chan os.Signal)})
	cleaned := false
	g.OnShutdown(func(context.Context) { cleaned = true })
	listenErr := errors.New("listen tcp :80: bind: address already in use")
	err := g.Run(context.Background(), &http.Server{}, func() error { return listenErr })
	if !errors.Is(err, listenErr) {
		t.Errorf("Run returned %v, want it to wrap %v", err, listenErr)
	}
	if !cleaned {
		t.Error("the cleanup callback did not run")
	}
}

func TestOnShutdownRunsInReverseOrderPastPanics(t *testing.T) {
	g := New(Options{})
	var order []string
	g.OnShutdown(func(context.Context) { order = append(order, "first") })
	g.OnShutdown(func(context.Context) { panic("cleanup bug") })
	g.OnShutdown(func(ctx context.Context) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("cleanup context has no deadline")
		}
		order = append(order, "third")
	})
	g.cleanUp()
	if want := []string{"third", "first"}; !slices.Equal(order, want) {
		t.Errorf("cleanups ran as %v, want %v", order, want)
	}
}

// signalChildEnv marks the re-executed test binary that plays the server in
// TestSignalDispositionRestoredOnlyAfterWindow.
const signalChildEnv = "GATE_TEST_SIGNAL_CHILD"

// TestSignalDispositionRestoredOnlyAfterWindow runs a real process with real
// signals: the second signal during the window is caught (it ends the
// window, the process lives on into its cleanup), and a third one during a
// hung cleanup kills the process, because the default disposition came back
// after the window.
func TestSignalDispositionRestoredOnlyAfterWindow(t *testing.T) {
	if os.Getenv(signalChildEnv) != "" {
		runSignalChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalDispositionRestoredOnlyAfterWindow$")
	cmd.Env = append(os.Environ(), signalChildEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
		close(lines)
	}()
	waitLine := func(want string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("the child exited before printing %q", want)
				}
				if strings.Contains(line, want) {
					return
				}
			case <-timeout:
				t.Fatalf("the child did not print %q within 10s", want)
			}
		}
	}
	waitLine("serving")
	cmd.Process.Signal(syscall.SIGINT)
	waitLine("Drain started")
	// Give a disposition restored too early (a bug) the time to take
	// effect, so that this second signal would kill the child.
	time.Sleep(200 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	waitLine("Second signal ends the drain window early")
	waitLine("cleanup started")
	cmd.Process.Signal(syscall.SIGTERM)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("a signal during the hung cleanup did not kill the process: the default disposition was not restored")
	}
	status := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !status.Signaled() || status.Signal() != syscall.SIGTERM {
		t.Errorf("child ended with %v, want killed by SIGTERM", cmd.ProcessState)
	}
}

// runSignalChild serves behind a gate with real signal handling, a drain
// window of an hour and a cleanup that never ends.
func runSignalChild() {
	g := New(Options{Drain: time.Hour, Logger: log.NewLogfmtLogger(log.NewSyncWriter(os.Stdout))})
	g.OnShutdown(func(context.Context) {
		fmt.Println("cleanup started")
		time.Sleep(time.Hour)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: g.HealthHandler()}
	g.Run(context.Background(), srv, func() error {
		fmt.Println("serving")
		return srv.Serve(ln)
	})
	fmt.Println("Run returned")
	os.Exit(1)
}

// TestSetTimingsChangesTheDrainWindow: a reload that lengthens the drain
// window applies to the next drain.
func TestSetTimingsChangesTheDrainWindow(t *testing.T) {
	const drain = 400 * time.Millisecond
	r := startRun(t, Options{}, okApp())
	r.gate.SetTimings(Options{Drain: drain})
	start := time.Now()
	r.signals <- syscall.SIGTERM
	if err := r.waitRun(t); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < drain {
		t.Errorf("Run returned %s after the signal, before the reloaded %s window ended", elapsed, drain)
	}
}
