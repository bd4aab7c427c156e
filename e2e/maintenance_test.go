package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// maintenanceConfig writes a configuration of n unprobed backends b0, b1, …
// (in service, state unknown) whose budget keeps minAvailable in service.
func maintenanceConfig(t *testing.T, n, minAvailable int) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "health_probe: {enabled: false}\nreadiness: {min_available: %d}\nbackends:\n", minAvailable)
	for i := range n {
		fmt.Fprintf(&b, "  - {name: b%d, url: \"http://127.0.0.1:%d\"}\n", i, 19001+i)
	}
	path := filepath.Join(t.TempDir(), "probegate.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// apiCall sends one admin API request and returns the status, a header
// and the body.
func apiCall(t testing.TB, method, url, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(data)
}

// cli runs `probegate maintenance …` against base and returns its exit
// code and output.
func cli(t *testing.T, base string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary(t), append(append([]string{"maintenance"}, args...), "--url="+base)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// TestMaintenanceAPIForbiddenWithoutFlag: without --web.enable-admin-api
// the API answers 403 saying how to enable it (the admin listener open for
// /-/reload), and creates no storage.
func TestMaintenanceAPIForbiddenWithoutFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	p := startProbegate(t, "--config.file="+maintenanceConfig(t, 2, 1), "--storage.path="+dir, "--web.enable-lifecycle")
	code, _, body := apiCall(t, "POST", p.admin+"/api/v1/backends/b0/maintenance", `{"reason":"x"}`)
	if code != http.StatusForbidden || !strings.Contains(body, "--web.enable-admin-api") {
		t.Errorf("POST without the flag: %d %s", code, body)
	}
	if got := getHealthz(t, p.base)["b0"].State; got != "unknown" {
		t.Errorf("b0 is %s, want unknown", got)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("storage directory created with the admin API off: %v", err)
	}
}

// TestMaintenanceBudgetRestartAndCLI walks a maintenance through the real
// binary: a granted POST, a refused one (429 with Retry-After and the
// budget's numbers, nothing changed), /healthz and /metrics showing it, a
// restart on the same --storage.path keeping it, and the CLI listing and
// ending it.
func TestMaintenanceBudgetRestartAndCLI(t *testing.T) {
	cfg, dir := maintenanceConfig(t, 3, 2), filepath.Join(t.TempDir(), "data")
	args := []string{"--config.file=" + cfg, "--web.enable-admin-api", "--storage.path=" + dir}
	p := startProbegate(t, args...)

	code, _, body := apiCall(t, "POST", p.admin+"/api/v1/backends/b0/maintenance", `{"reason":"disk swap","ttl":"2h"}`)
	if code != http.StatusOK {
		t.Fatalf("POST b0: %d %s", code, body)
	}
	code, header, body := apiCall(t, "POST", p.admin+"/api/v1/backends/b1/maintenance", `{"reason":"kernel"}`)
	var refused struct{ Expected, CurrentHealthy, DesiredHealthy, DisruptionsAllowed int }
	if err := json.Unmarshal([]byte(body), &struct {
		Expected           *int `json:"expected"`
		CurrentHealthy     *int `json:"current_healthy"`
		DesiredHealthy     *int `json:"desired_healthy"`
		DisruptionsAllowed *int `json:"disruptions_allowed"`
	}{&refused.Expected, &refused.CurrentHealthy, &refused.DesiredHealthy, &refused.DisruptionsAllowed}); err != nil {
		t.Fatalf("429 body %q: %v", body, err)
	}
	if code != http.StatusTooManyRequests || header.Get("Retry-After") == "" ||
		refused != (struct{ Expected, CurrentHealthy, DesiredHealthy, DisruptionsAllowed int }{3, 2, 2, 0}) {
		t.Errorf("POST b1: %d Retry-After %q %+v", code, header.Get("Retry-After"), refused)
	}
	h := getHealthz(t, p.base)
	if h["b0"].State != "maintenance" || h["b0"].InService || h["b1"].State != "unknown" {
		t.Errorf("/healthz: %+v", h)
	}
	if body := getBody(t, p.base+"/healthz"); !strings.Contains(body, `"reason": "disk swap"`) {
		t.Errorf("/healthz does not show the maintenance reason:\n%s", body)
	}
	if v := metricValue(t, p.base, `probegate_backend_state{backend="b0",state="maintenance"}`); v != 1 {
		t.Errorf("b0 maintenance series %v", v)
	}
	if v := metricValue(t, p.base, `probegate_maintenance_refusals_total`); v != 1 {
		t.Errorf("refusals %v", v)
	}

	// The CLI refuses b2 too, with the numbers, exit 1.
	if code, out := cli(t, p.admin, "start", "b2", "--reason=upgrade"); code != 1 || !strings.Contains(out, "disruptions_allowed=0") {
		t.Errorf("CLI start b2: exit %d\n%s", code, out)
	}
	if code, out := cli(t, p.admin, "start", "b2"); code != 2 {
		t.Errorf("CLI start without --reason: exit %d, want 2\n%s", code, out)
	}

	// Restart on the same storage: b0 is still in maintenance at once.
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.exitCode(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	p = startProbegate(t, args...)
	if got := getHealthz(t, p.base)["b0"].State; got != "maintenance" {
		t.Fatalf("after a restart b0 is %s, want maintenance", got)
	}

	code, out := cli(t, p.admin, "list")
	if code != 0 || !regexpMatch(`(?m)^b0\s+maintenance\s+no\s+disk swap\s`, out) || !regexpMatch(`(?m)^b1\s+unknown\s+yes\s+-`, out) {
		t.Errorf("CLI list: exit %d\n%s", code, out)
	}
	if code, out := cli(t, p.admin, "stop", "b0"); code != 0 || !strings.Contains(out, "b0 left maintenance") {
		t.Errorf("CLI stop: exit %d\n%s", code, out)
	}
	if got := getHealthz(t, p.base)["b0"].State; got != "unknown" {
		t.Errorf("after stop, unprobed b0 is %s, want its probe-derived unknown", got)
	}
	if code, out := cli(t, p.admin, "start", "b1", "--reason=kernel", "--ttl=1h"); code != 0 || !strings.Contains(out, "b1 is in maintenance until") {
		t.Errorf("CLI start b1: exit %d\n%s", code, out)
	}
	if code, out := cli(t, p.admin, "list", "nope"); code != 1 {
		t.Errorf("CLI list of an unknown backend: exit %d\n%s", code, out)
	}
}

// TestMaintenanceReadmissionNeedsProbes: a probed backend leaving
// maintenance is unhealthy until `successes` ok probes readmit it.
func TestMaintenanceReadmissionNeedsProbes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "probegate.yml")
	writeConfig(t, path, map[string]string{"a": okBackend(t).URL, "b": okBackend(t).URL},
		"readiness: {min_available: 1}\n")
	p := startProbegate(t, "--config.file="+path, "--web.enable-admin-api", "--storage.path="+t.TempDir(), "--health-probe.successes=3")
	// A request is judged once every backend has a verdict.
	waitFor(t, 5*time.Second, "a and b healthy", func() bool {
		h := getHealthz(t, p.base)
		return h["a"].State == "healthy" && h["b"].State == "healthy"
	})
	if code, _, body := apiCall(t, "POST", p.admin+"/api/v1/backends/a/maintenance", `{"reason":"x"}`); code != 200 {
		t.Fatalf("POST: %d %s", code, body)
	}
	probes := metricValue(t, p.base, `probegate_probes_total{backend="a"}`)
	waitFor(t, 5*time.Second, "probes during maintenance", func() bool {
		return metricValue(t, p.base, `probegate_probes_total{backend="a"}`) >= probes+2
	})
	if got := getHealthz(t, p.base)["a"].State; got != "maintenance" {
		t.Fatalf("ok probes moved a to %s during maintenance", got)
	}
	code, _, body := apiCall(t, "DELETE", p.admin+"/api/v1/backends/a/maintenance", "")
	if code != 200 || !strings.Contains(body, `"state":"unhealthy"`) {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	left := metricValue(t, p.base, `probegate_probes_total{backend="a"}`)
	waitFor(t, 5*time.Second, "a readmitted", func() bool { return getHealthz(t, p.base)["a"].State == "healthy" })
	if n := metricValue(t, p.base, `probegate_probes_total{backend="a"}`) - left; n < 3 {
		t.Errorf("readmitted after %v probes, want at least 3", n)
	}
}

// TestMaintenanceCorruptStateStopsStartup: a state file that does not
// parse stops start-up with an error naming it, and is left as it was.
func TestMaintenanceCorruptStateStopsStartup(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "maintenance.json")
	if err := os.WriteFile(state, []byte(`{"maintenance":[{"backend":"b0",`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := launchProbegate(t, freeAddr(t), "--config.file="+maintenanceConfig(t, 2, 1), "--web.enable-admin-api", "--storage.path="+dir)
	if code := p.exitCode(t, 10*time.Second); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(p.output.String(), state) {
		t.Errorf("the error does not name %s:\n%s", state, p.output)
	}
	if got, _ := os.ReadFile(state); string(got) != `{"maintenance":[{"backend":"b0",` {
		t.Errorf("state file changed to %q", got)
	}
}

// TestMaintenanceConcurrentRequestsShareTheBudget: eight POSTs at once
// for different backends, with a budget that allows exactly one: one 200,
// seven 429.
func TestMaintenanceConcurrentRequestsShareTheBudget(t *testing.T) {
	p := startProbegate(t, "--config.file="+maintenanceConfig(t, 8, 7), "--web.enable-admin-api", "--storage.path="+t.TempDir())
	codes := make([]int, 8)
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := range codes {
		wg.Go(func() {
			start.Wait()
			codes[i], _, _ = apiCall(t, "POST", fmt.Sprintf("%s/api/v1/backends/b%d/maintenance", p.admin, i), `{"reason":"race"}`)
		})
	}
	start.Done()
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	if count[200] != 1 || count[429] != 7 {
		t.Errorf("answers %v, want one 200 and seven 429", codes)
	}
}

// TestMaintenanceStateSurvivesKill: kill -9 at random moments of a stream
// of POSTs and DELETEs leaves the state file whole (the old or the new
// one, never torn), and probegate starts on it.
func TestMaintenanceStateSurvivesKill(t *testing.T) {
	cfg, dir := maintenanceConfig(t, 2, 1), t.TempDir()
	args := []string{"--config.file=" + cfg, "--web.enable-admin-api", "--storage.path=" + dir}
	var changes atomic.Int64
	for round := range 8 {
		p := startProbegate(t, args...)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			client := &http.Client{Timeout: time.Second}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				method := "POST"
				if i%2 == 1 {
					method = "DELETE"
				}
				req, _ := http.NewRequest(method, p.admin+"/api/v1/backends/b0/maintenance", strings.NewReader(fmt.Sprintf(`{"reason":"round %d request %d"}`, round, i)))
				if resp, err := client.Do(req); err == nil {
					if resp.StatusCode == http.StatusOK {
						changes.Add(1)
					}
					resp.Body.Close()
				} else {
					return // killed
				}
			}
		})
		time.Sleep(time.Duration(20+rand.IntN(100)) * time.Millisecond)
		p.cmd.Process.Kill()
		<-p.done
		close(stop)
		wg.Wait()

		data, err := os.ReadFile(filepath.Join(dir, "maintenance.json"))
		if os.IsNotExist(err) {
			continue // killed before the first save: the old state, none
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		var state struct {
			Maintenance []struct {
				Backend string `json:"backend"`
			} `json:"maintenance"`
		}
		if err := json.Unmarshal(data, &state); err != nil {
			t.Fatalf("round %d: torn state file %q: %v", round, data, err)
		}
	}
	if changes.Load() < 8 {
		t.Errorf("only %d changes before the kills: the test did not write", changes.Load())
	}
	startProbegate(t, args...) // starts on whatever the last kill left
}

// TestDemoShowsMaintenance: the demo serves the admin API on loopback and
// its banner's curl puts a backend in maintenance.
func TestDemoShowsMaintenance(t *testing.T) {
	p := startProbegate(t, "demo")
	m := regexp.MustCompile(`curl -s -X POST -d '(\{[^']*\})' (\S+/api/v1/backends/\S+/maintenance)`).FindStringSubmatch(p.output.String())
	if m == nil {
		t.Fatalf("the demo banner shows no maintenance curl:\n%s", p.output)
	}
	// Until the demo's backends have a verdict and its discovery has
	// delivered, the request is not judged: 503 "not yet probed", for a
	// few seconds after the start.
	var code int
	var body string
	waitFor(t, 20*time.Second, "the banner's curl judged", func() bool {
		code, _, body = apiCall(t, "POST", m[2], m[1])
		return code != http.StatusServiceUnavailable || !strings.Contains(body, "not yet probed")
	})
	if code != http.StatusOK {
		t.Errorf("the banner's curl: %d %s", code, body)
	}
}

// TestMaintenanceCLIWithBasicAuth: behind basic auth, the CLI sends the
// credentials of its --http.config.file, and the entry records the user.
func TestMaintenanceCLIWithBasicAuth(t *testing.T) {
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig, httpConfig := filepath.Join(dir, "web.yml"), filepath.Join(dir, "http.yml")
	if err := os.WriteFile(webConfig, []byte("basic_auth_users:\n  operator: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(httpConfig, []byte("basic_auth: {username: operator, password: s3cret}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := launchProbegate(t, addr, "--config.file="+maintenanceConfig(t, 2, 1), "--web.enable-admin-api",
		"--storage.path="+filepath.Join(dir, "data"), "--web.config.file="+webConfig)
	waitFor(t, 10*time.Second, "probegate listening", func() bool {
		resp, err := http.Get(p.base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized
	})
	if code, out := cli(t, p.admin, "list"); code != 1 || !strings.Contains(out, "401") {
		t.Errorf("CLI without credentials: exit %d\n%s", code, out)
	}
	if code, out := cli(t, p.admin, "start", "b0", "--reason=swap", "--http.config.file="+httpConfig); code != 0 {
		t.Fatalf("CLI start with credentials: exit %d\n%s", code, out)
	}
	if code, out := cli(t, p.admin, "list", "b0", "--http.config.file="+httpConfig); code != 0 || !regexpMatch(`(?m)^b0\s+maintenance\s.*\soperator$`, out) {
		t.Errorf("CLI list: exit %d\n%s", code, out)
	}
}

func regexpMatch(pattern, s string) bool {
	return regexp.MustCompile(pattern).MatchString(s)
}

// TestMaintenanceOfflineStop: with the admin API off, an entry in force is
// warned about at start-up; `probegate maintenance stop NAME
// --storage.path DIR` refuses while that probegate holds the directory,
// and ends the entry once it is stopped.
func TestMaintenanceOfflineStop(t *testing.T) {
	dir := t.TempDir()
	cfg := maintenanceConfig(t, 2, 1)
	p := startProbegate(t, "--config.file="+cfg, "--web.enable-admin-api", "--storage.path="+dir)
	if code, _, body := apiCall(t, "POST", p.admin+"/api/v1/backends/b1/maintenance", `{"reason":"disk"}`); code != http.StatusOK {
		t.Fatalf("POST: %d %s", code, body)
	}
	p.cmd.Process.Kill()
	<-p.done

	p = startProbegate(t, "--config.file="+cfg, "--storage.path="+dir)
	if out := p.output.String(); !strings.Contains(out, "admin API is off") || !strings.Contains(out, "b1") {
		t.Errorf("no start-up warning naming b1 with the admin API off:\n%s", out)
	}
	stop := func() (int, string) {
		out, err := exec.Command(binary(t), "maintenance", "stop", "b1", "--storage.path="+dir).CombinedOutput()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		code := 0
		if err != nil {
			code = err.(*exec.ExitError).ExitCode()
		}
		return code, string(out)
	}
	if code, out := stop(); code != 1 || !strings.Contains(out, "holds the storage directory") {
		t.Errorf("offline stop under a running probegate: exit %d %s; want 1, refused", code, out)
	}
	p.cmd.Process.Kill()
	<-p.done
	if code, out := stop(); code != 0 || !strings.Contains(out, "left maintenance") {
		t.Fatalf("offline stop: exit %d %s", code, out)
	}
	p = startProbegate(t, "--config.file="+cfg, "--storage.path="+dir)
	if got := getHealthz(t, p.base)["b1"].State; got == "maintenance" {
		t.Errorf("b1 still in maintenance after the offline stop")
	}
}
