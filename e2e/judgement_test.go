package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// doorCase is one invalid configuration, fed to every door.
type doorCase struct {
	name, data string
}

// invalidConfigurations are every invalid fixture of the config package,
// a readiness budget the listed backends cannot meet, a backend at
// probegate's own fan-out on addr and one at the root of its admin
// listener.
func invalidConfigurations(t *testing.T, addr, admin, backendURL string) []doorCase {
	t.Helper()
	files, err := filepath.Glob("../config/testdata/invalid-*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid fixtures: %v", err)
	}
	var cases []doorCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, doorCase{filepath.Base(f), string(data)})
	}
	three := fmt.Sprintf("backends:\n  - {name: a, url: %q}\n  - {name: b, url: %q}\n  - {name: c, url: %q}\n", backendURL, backendURL+"/b", backendURL+"/c")
	return append(cases,
		doorCase{"min_available above the backends", "readiness:\n  min_available: 5\n" + three},
		doorCase{"a backend at probegate's own fan-out", three + "  - {name: self, url: \"http://" + addr + "/fanout\"}\n"},
		doorCase{"a backend at probegate's admin listener", three + "  - {name: self, url: \"http://" + admin + "/\"}\n"},
		doorCase{"a problem after a bad duration", "health_probe:\n  interval: 5\n" + three + "  - {name: d, url: \"ftp://x\"}\n"},
	)
}

// checkConfigDoor runs check-config on path with --web.listen-address=addr
// and --web.admin-listen-address=admin (opened, for /-/reload) and returns what it printed on
// stderr; it must exit 1.
func checkConfigDoor(t *testing.T, path, addr, admin string) string {
	t.Helper()
	cmd := exec.Command(binary(t), "check-config", "--config.file="+path, "--web.listen-address="+addr, "--web.admin-listen-address="+admin, "--web.enable-lifecycle")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("check-config: %v, want exit 1; stderr:\n%s", err, &stderr)
	}
	return strings.TrimSuffix(stderr.String(), "\n")
}

// startUpDoor starts probegate on addr, its admin listener on admin
// (opened, for /-/reload), with path and returns the error it logged as it refused to start; it must
// exit 1 without serving.
func startUpDoor(t *testing.T, path, addr, admin string) string {
	t.Helper()
	cmd := exec.Command(binary(t), "--config.file="+path, "--web.listen-address="+addr, "--web.admin-listen-address="+admin, "--web.enable-lifecycle", "--log.format=json")
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	timer.Stop()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("start-up: %v, want exit 1; stderr:\n%s", err, &stderr)
	}
	for s := bufio.NewScanner(&stderr); s.Scan(); {
		var line struct{ Msg, Err string }
		if json.Unmarshal(s.Bytes(), &line) == nil && line.Msg == "Invalid configuration" {
			return line.Err
		}
	}
	t.Errorf("start-up logged no \"Invalid configuration\" line:\n%s", &stderr)
	return ""
}

// reloadDoor asks the running probegate whose admin listener is base to reload, and returns
// the problems its refusal names; the refusal must be a 500.
func reloadDoor(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Post(base+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	const prefix = "reload failed, the running configuration is kept: "
	if resp.StatusCode != http.StatusInternalServerError || !bytes.HasPrefix(body, []byte(prefix)) {
		t.Errorf("reload: %d %q, want 500 starting %q", resp.StatusCode, body, prefix)
	}
	return strings.TrimSuffix(strings.TrimPrefix(string(body), prefix), "\n")
}

// TestEveryDoorJudgesAlike: check-config, start-up and a reload judge a
// configuration with one judgement. Every invalid fixture, a budget the
// listed backends cannot meet (which once reloaded and turned /ready 503)
// and a backend at probegate's own fan-out are refused by all three with
// the same problems, and a refused reload keeps the running configuration
// and readiness.
func TestEveryDoorJudgesAlike(t *testing.T) {
	backend := okBackend(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "probegate.yml")
	addr, admin := freeAddr(t), freeAddr(t)
	cases := invalidConfigurations(t, addr, admin, backend.URL)

	// Start-up first, on the address the reload's probegate will hold.
	refused := make(map[string]string, len(cases))
	for _, c := range cases {
		if err := os.WriteFile(path, []byte(c.data), 0o600); err != nil {
			t.Fatal(err)
		}
		want := checkConfigDoor(t, path, addr, admin)
		if want == "" {
			t.Errorf("%s: check-config named no problem", c.name)
		}
		if got := startUpDoor(t, path, addr, admin); got != want {
			t.Errorf("%s: start-up refused with\n%s\ncheck-config with\n%s", c.name, got, want)
		}
		refused[c.name] = want
	}

	valid := fmt.Sprintf("health_probe: {interval: 200ms, timeout: 100ms}\nbackends:\n  - {name: a, url: %q}\n", backend.URL)
	if err := os.WriteFile(path, []byte(valid), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launchProbegate(t, addr, "--config.file="+path, "--web.enable-lifecycle", "--web.admin-listen-address="+admin)
	p.waitServing(t)
	// Healthy first, so that a refused reload that rebuilt the backend
	// (its state back to unknown) shows below.
	waitFor(t, 10*time.Second, "a healthy and /ready 200", func() bool {
		return getHealthz(t, p.base)["a"].State == "healthy" && statusOf(t, p.base+"/ready") == http.StatusOK
	})
	for _, c := range cases {
		if err := os.WriteFile(path, []byte(c.data), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := reloadDoor(t, p.admin); got != refused[c.name] {
			t.Errorf("%s: reload refused with\n%s\ncheck-config with\n%s", c.name, got, refused[c.name])
		}
		if code := statusOf(t, p.base+"/ready"); code != http.StatusOK {
			t.Fatalf("%s: /ready is %d after a refused reload, want 200: the running configuration was not kept", c.name, code)
		}
	}
	if hz := getHealthz(t, p.base); len(hz) != 1 || hz["a"].State != "healthy" {
		t.Errorf("running configuration not kept after the refused reloads: %+v", hz)
	}
}

// statusOf is the status code of a GET of url.
func statusOf(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
