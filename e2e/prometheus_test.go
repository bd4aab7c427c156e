package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/internal/syncbuffer"
	"github.com/probegate/probegate/mixin/lint"
)

// shortFor shortens the `for` of the alerts this test waits for, through
// the same _config override a user would write.
const shortFor = `{alertFor: {ProbegateProbePathMisconfigured: "5s", ProbegateBackendUnhealthy: "3s"}}`

// TestPrometheusAlertsOnTheDemo runs the generated rules in a real
// Prometheus scraping `probegate demo` every second: the misconfiguration
// alert fires for the wrong-path backend and for no other (not for the
// proxy flipping 404/503, which is unhealthy, nor for the dead one), and
// every probegate metric the rules and dashboards query is exposed.
func TestPrometheusAlertsOnTheDemo(t *testing.T) {
	promBin := requireTool(t, "prometheus")
	demo := startProbegate(t, "demo")
	dir := t.TempDir()
	ruleFiles := generateRules(t, dir, shortFor)
	prom := startPrometheus(t, promBin, dir, strings.TrimPrefix(demo.base, "http://"), ruleFiles)

	// firedFor collects, per alert, every backend it was ever seen firing
	// for; the final poll's active (pending or firing) set is kept apart.
	firedFor := map[string]map[string]bool{}
	var misconfigured promAlert
	var active []promAlert
	waitFor(t, 60*time.Second, "ProbegateProbePathMisconfigured and ProbegateBackendUnhealthy firing", func() bool {
		active = prom.alerts(t)
		for _, a := range active {
			if a.State != "firing" {
				continue
			}
			name := a.Labels["alertname"]
			if firedFor[name] == nil {
				firedFor[name] = map[string]bool{}
			}
			firedFor[name][a.Labels["backend"]] = true
			if name == "ProbegateProbePathMisconfigured" && a.Labels["backend"] == "wrong-path" {
				misconfigured = a
			}
		}
		return firedFor["ProbegateProbePathMisconfigured"]["wrong-path"] && firedFor["ProbegateBackendUnhealthy"]["dead"]
	})

	if got := keys(firedFor["ProbegateProbePathMisconfigured"]); !slices.Equal(got, []string{"wrong-path"}) {
		t.Errorf("ProbegateProbePathMisconfigured fired for %v, want only wrong-path", got)
	}
	if got := activeBackends(active, "ProbegateProbePathMisconfigured"); !slices.Equal(got, []string{"wrong-path"}) {
		t.Errorf("ProbegateProbePathMisconfigured is active for %v, want only wrong-path", got)
	}
	for _, b := range []string{"healthy", "wrong-path"} {
		if firedFor["ProbegateBackendUnhealthy"][b] {
			t.Errorf("ProbegateBackendUnhealthy fired for %s, which is in service", b)
		}
	}
	if got := activeBackends(active, "ProbegatePoolProbePathMisconfigured"); len(got) > 0 {
		t.Errorf("ProbegatePoolProbePathMisconfigured is active although only one backend refuses")
	}

	// The join with probegate_backend_info puts the probe path and url on
	// the alert and into its description.
	if p := misconfigured.Labels["probe_path"]; p != "/healthz" {
		t.Errorf("misconfiguration alert probe_path = %q, want the demo's /healthz", p)
	}
	if u := misconfigured.Labels["url"]; !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Errorf("misconfiguration alert url = %q, want the demo backend's loopback url", u)
	}
	desc := misconfigured.Annotations["description"]
	// It aggregates over replicas: the job is named, and no instance is
	// left on it to name.
	if i, ok := misconfigured.Labels["instance"]; ok {
		t.Errorf("misconfiguration alert keeps instance %q; it should aggregate over replicas", i)
	}
	// The description says why, from a query Prometheus runs as it
	// writes the annotation: the status the probe path answers.
	for _, want := range []string{"wrong-path", "/healthz", misconfigured.Labels["url"], misconfigured.Labels["job"], "last answering HTTP 404"} {
		if want == "" || !strings.Contains(desc, want) {
			t.Errorf("misconfiguration description %q does not name %q", desc, want)
		}
	}
	if summary := misconfigured.Annotations["summary"]; !strings.HasPrefix(summary, "Backend wrong-path ") {
		t.Errorf("misconfiguration summary %q does not name the backend", summary)
	}

	t.Run("every queried probegate metric is exposed", func(t *testing.T) {
		exposed := map[string]bool{}
		for _, name := range prom.metricNames(t) {
			exposed[name] = true
		}
		for _, name := range queriedProbegateMetrics(t) {
			// The demo is one probegate with the file store and without
			// passive health, and a feature that is off exports nothing;
			// replicas_test.go reads the series of replicas sharing etcd.
			if onlyWith(name) != "" {
				continue
			}
			if !exposed[name] {
				t.Errorf("%s is queried by the rules or dashboards but the demo does not expose it", name)
			}
		}
	})
}

// onlyWith is what probegate exports metric only with, empty when it
// always does.
func onlyWith(metric string) string {
	for _, m := range lint.DocumentedMetrics() {
		if m.Name == metric {
			return m.OnlyWith
		}
	}
	return ""
}

// generateRules writes the mixin's rule files with the _config override
// config into dir and returns their paths.
func generateRules(t *testing.T, dir, config string) []string {
	t.Helper()
	cmd := exec.Command("go", "tool", "jsonnet", "-S", "-m", dir, "--tla-code", "config="+config, "../mixin/build/rules.jsonnet")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("generate rules: %v\n%s", err, stderr.String())
	}
	// jsonnet -m prints the path of every file it wrote.
	files := strings.Fields(string(out))
	if len(files) != 2 {
		t.Fatalf("generate rules: got files %v, want the alerts and the recording rules", files)
	}
	return files
}

// prometheusServer is a running Prometheus.
type prometheusServer struct {
	base string
}

// startPrometheus runs Prometheus scraping target every second and
// evaluating ruleFiles every second, with its storage in dir, and waits
// until it is ready. It is killed when the test ends.
func startPrometheus(t *testing.T, bin, dir, target string, ruleFiles []string) *prometheusServer {
	t.Helper()
	quoted := make([]string, len(ruleFiles))
	for i, f := range ruleFiles {
		quoted[i] = fmt.Sprintf("%q", f)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%s]
scrape_configs:
  - job_name: probegate
    static_configs:
      - targets: [%q]
`, strings.Join(quoted, ", "), target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	output := &syncbuffer.Buffer{}
	cmd := exec.Command(bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("prometheus output:\n%s", output.String())
		}
	})
	p := &prometheusServer{base: "http://" + addr}
	waitFor(t, 20*time.Second, "prometheus /-/ready", func() bool {
		select {
		case <-done:
			t.Fatalf("prometheus exited:\n%s", output.String())
		default:
		}
		resp, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// promAlert is one alert of Prometheus' /api/v1/alerts.
type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

func (p *prometheusServer) alerts(t *testing.T) []promAlert {
	t.Helper()
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	p.get(t, "/api/v1/alerts", &data)
	return data.Alerts
}

func (p *prometheusServer) metricNames(t *testing.T) []string {
	t.Helper()
	var names []string
	p.get(t, "/api/v1/label/__name__/values", &names)
	return names
}

// get decodes the data of a successful Prometheus API response into out.
func (p *prometheusServer) get(t *testing.T, path string, out any) {
	t.Helper()
	resp, err := http.Get(p.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if body.Status != "success" {
		t.Fatalf("%s: status %q: %s", path, body.Status, body.Error)
	}
	if err := json.Unmarshal(body.Data, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// queriedProbegateMetrics lists every probegate_ series name that the
// committed rule files and dashboards query. Recording rules' outputs
// (level:metric:operations) are not exposed by probegate and are left out.
func queriedProbegateMetrics(t *testing.T) []string {
	t.Helper()
	var exprs []string
	for _, path := range []string{"../rules/probegate-alerts.yaml", "../rules/probegate-rules.yaml"} {
		rf, err := lint.LoadRuleFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rf.Rules() {
			exprs = append(exprs, r.Expr)
		}
	}
	dashboards, err := filepath.Glob("../dashboards/*.json")
	if err != nil || len(dashboards) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	for _, path := range dashboards {
		d, err := lint.LoadDashboard(path)
		if err != nil {
			t.Fatal(err)
		}
		de, err := d.Expressions()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		exprs = append(exprs, de...)
	}
	seen := map[string]bool{}
	for _, expr := range exprs {
		parsed, err := lint.Parse(expr)
		if err != nil {
			t.Fatalf("%v in %s", err, expr)
		}
		for _, name := range parsed.Metrics() {
			if strings.HasPrefix(name, "probegate_") {
				seen[name] = true
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("the rules and dashboards query no probegate metric")
	}
	return keys(seen)
}

// activeBackends lists the backends an alert is pending or firing for.
func activeBackends(alerts []promAlert, name string) []string {
	set := map[string]bool{}
	for _, a := range alerts {
		if a.Labels["alertname"] == name {
			set[a.Labels["backend"]] = true
		}
	}
	return keys(set)
}

func keys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
