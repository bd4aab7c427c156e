package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// gateConfig writes a probegate configuration with one loopback backend and
// the drain window given (a YAML duration), and returns its path.
func gateConfig(t *testing.T, drain string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "probegate.yml")
	cfg := fmt.Sprintf("gate: {drain: %s}\nhealth_probe: {path: /, interval: 1s, timeout: 500ms}\nbackends:\n  - {name: a, url: %q}\n",
		drain, okBackend(t).URL)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readyAnswer is one /ready response.
type readyAnswer struct {
	status   int
	draining bool
	body     string
}

// getReadyOnNewConnection asks /ready on a connection opened for this
// request alone, as a load balancer's health check does.
func getReadyOnNewConnection(base string) (readyAnswer, error) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second}
	resp, err := client.Get(base + "/ready")
	if err != nil {
		return readyAnswer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return readyAnswer{}, err
	}
	var h struct {
		Draining *bool `json:"draining"`
	}
	if err := json.Unmarshal(body, &h); err != nil || h.Draining == nil {
		return readyAnswer{}, fmt.Errorf("/ready body %q has no draining field (%v)", body, err)
	}
	return readyAnswer{status: resp.StatusCode, draining: *h.Draining, body: string(body)}, nil
}

// startReadyProbegate runs probegate with the drain window given and waits
// until /ready passes.
func startReadyProbegate(t *testing.T, drain string) *probegateProcess {
	t.Helper()
	p := startProbegate(t, "--config.file="+gateConfig(t, drain))
	waitFor(t, 10*time.Second, "/ready answering 200", func() bool {
		a, err := getReadyOnNewConnection(p.base)
		return err == nil && a.status == http.StatusOK && !a.draining
	})
	return p
}

// exitCode waits for the process to exit within the deadline and returns
// its exit code.
func (p *probegateProcess) exitCode(t *testing.T, deadline time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(deadline):
		t.Fatalf("probegate still running %s later", deadline)
		return -1
	}
}

// TestDrainWindowIsTheConfiguredOne signals a real probegate and polls
// /ready on a new connection every 50ms: it must fail with "draining":true
// at once, everything is still served for exactly the configured window,
// then the port closes and the process exits 0. Two window lengths show the
// window is the configured one.
func TestDrainWindowIsTheConfiguredOne(t *testing.T) {
	for _, window := range []time.Duration{time.Second, 3 * time.Second} {
		t.Run(window.String(), func(t *testing.T) {
			t.Parallel()
			p := startReadyProbegate(t, window.String())
			keepAlive := &http.Client{Transport: &http.Transport{}}
			defer keepAlive.CloseIdleConnections()
			if resp := mustGet(t, keepAlive, p.base+"/health"); resp.Close {
				t.Fatal("before the signal: /health answered Connection: close, want keep-alive")
			}

			signalled := time.Now()
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			var drainingSeen, lastServed time.Time
			var closed bool
			for deadline := signalled.Add(window + 5*time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				a, err := getReadyOnNewConnection(p.base)
				now := time.Now()
				if err != nil {
					closed = true
					break
				}
				lastServed = now
				switch {
				case a.draining && a.status == http.StatusServiceUnavailable:
					if drainingSeen.IsZero() {
						drainingSeen = now
						// Everything else is still served, with keep-alive off.
						if resp := mustGet(t, keepAlive, p.base+"/health"); resp.StatusCode != http.StatusOK || !resp.Close {
							t.Errorf("draining: /health %d close=%v, want 200 with Connection: close", resp.StatusCode, resp.Close)
						}
					}
				case !drainingSeen.IsZero():
					t.Fatalf("after draining was seen, /ready answered %d %s", a.status, a.body)
				case a.status != http.StatusOK:
					t.Fatalf("before draining, /ready answered %d %s", a.status, a.body)
				}
			}
			if !closed {
				t.Fatalf("probegate still accepts connections %s after the signal", window+5*time.Second)
			}
			if drainingSeen.IsZero() {
				t.Fatal("/ready never answered 503 with \"draining\":true")
			}
			if d := drainingSeen.Sub(signalled); d > 500*time.Millisecond {
				t.Errorf("draining showed %s after the signal, want at once", d)
			}
			// Polling every 50ms, the last answer comes within about 50ms
			// of the window's end; shutdown after it is quick.
			if served := lastServed.Sub(signalled); served < window-150*time.Millisecond || served > window+time.Second {
				t.Errorf("served for %s after the signal, want the configured window %s", served, window)
			}
			if code := p.exitCode(t, 5*time.Second); code != 0 {
				t.Errorf("exit code %d, want 0", code)
			}
			t.Logf("window %s: draining %s after the signal, last answer at %s", window,
				drainingSeen.Sub(signalled).Round(time.Millisecond), lastServed.Sub(signalled).Round(time.Millisecond))
		})
	}
}

// TestSecondSignalEndsTheDrainWindowEarly: with a 30s window, a SIGINT
// after the SIGTERM shuts probegate down at once, exit code 0.
func TestSecondSignalEndsTheDrainWindowEarly(t *testing.T) {
	p := startReadyProbegate(t, "30s")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "/ready draining", func() bool {
		a, err := getReadyOnNewConnection(p.base)
		return err == nil && a.draining
	})
	second := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t, 5*time.Second); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	t.Logf("exited %s after the second signal, in a 30s window", time.Since(second).Round(time.Millisecond))
}

// mustGet makes a request with client and drains the response.
func mustGet(t *testing.T, client *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
