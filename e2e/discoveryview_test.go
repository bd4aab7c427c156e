package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// discoveryAnswer is the body of /api/v1/discovery.
type discoveryAnswer struct {
	Status string `json:"status"`
	Data   struct {
		Sources []struct {
			Mechanism     string         `json:"mechanism"`
			Targets       int            `json:"targets"`
			Backends      int            `json:"backends"`
			DroppedCounts map[string]int `json:"dropped_counts"`
			Active        []targetView   `json:"active_targets"`
			Dropped       []targetView   `json:"dropped_targets"`
		} `json:"sources"`
	} `json:"data"`
}

type targetView struct {
	Source  string            `json:"source"`
	Line    int               `json:"line"`
	Labels  map[string]string `json:"discovered_labels"`
	Backend string            `json:"backend"`
	URL     string            `json:"url"`
	Reason  string            `json:"reason"`
	Error   string            `json:"error"`
}

// TestDiscoveryViewShowsEveryTargetAndWhy: /api/v1/discovery and
// /status/discovery show, per mechanism, the target that became a
// backend with its discovered labels, and the ones relabelling dropped,
// the invalid one (its password redacted) and the one whose name a
// static backend has, each with its reason; every reason's counter
// exists from the start; /status links the page.
func TestDiscoveryViewShowsEveryTargetAndWhy(t *testing.T) {
	one, static := okBackend(t), okBackend(t)
	dir := t.TempDir()
	writeAtomically(t, filepath.Join(dir, "sd.yml"), fmt.Sprintf(`
- targets: [%q]
  labels: {backend: one, team: db}
- targets: ["127.0.0.1:28003"]
  labels: {env: test}
- targets: ["alice:hunter2@127.0.0.1:28001"]
- targets: ["127.0.0.1:28002"]
  labels: {backend: static}
`, hostPort(t, one.URL)))
	cfg := filepath.Join(dir, "probegate.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`
backends: [{name: static, url: %q}]
file_sd_configs: [{files: [sd.yml]}]
relabel_configs: [{source_labels: [env], regex: test, action: drop}]
`, static.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProbegate(t, "--config.file="+cfg, "--discovery.update-interval=100ms")
	for _, reason := range []string{"relabel", "invalid", "name_clash", "limit", "loop"} {
		metricValue(t, p.base, fmt.Sprintf(`probegate_discovery_dropped_targets_total{reason=%q}`, reason))
	}
	var answer discoveryAnswer
	waitFor(t, 10*time.Second, "the discovery view showing the file's targets", func() bool {
		body := getBody(t, p.base+"/api/v1/discovery")
		if err := json.Unmarshal([]byte(body), &answer); err != nil {
			t.Fatalf("/api/v1/discovery %q: %v", body, err)
		}
		return len(answer.Data.Sources) > 0 && answer.Data.Sources[0].Targets == 4
	})
	file := answer.Data.Sources[0]
	if len(answer.Data.Sources) != 1 {
		t.Errorf("%d sources, want the file alone: no dns section without dns_sd_configs", len(answer.Data.Sources))
	}
	if answer.Status != "success" || file.Mechanism != "file" || file.Backends != 1 || len(file.Active) != 1 {
		t.Fatalf("view %+v, want the file mechanism with one backend", answer)
	}
	if a := file.Active[0]; a.Backend != "one" || a.Labels["team"] != "db" || a.Labels["__address__"] != hostPort(t, one.URL) || a.URL != one.URL {
		t.Errorf("active target %+v, want backend one with its discovered labels", a)
	}
	reasons := map[string]targetView{}
	for _, d := range file.Dropped {
		reasons[d.Reason] = d
	}
	if reasons["relabel"].Labels["env"] != "test" || reasons["name_clash"].Backend != "static" ||
		!strings.Contains(reasons["invalid"].Error, "is not host:port") || reasons["invalid"].Labels["__address__"] != "alice:xxxxx@127.0.0.1:28001" {
		t.Errorf("dropped targets %+v, want the relabel drop, the clash with static and the invalid one, redacted", file.Dropped)
	}
	if file.DroppedCounts["relabel"] != 1 || file.DroppedCounts["invalid"] != 1 || file.DroppedCounts["name_clash"] != 1 || file.DroppedCounts["loop"] != 0 {
		t.Errorf("dropped counts %v", file.DroppedCounts)
	}
	var found discoveryAnswer
	if err := json.Unmarshal([]byte(getBody(t, p.base+"/api/v1/discovery?target=127.0.0.1:28003")), &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Data.Sources) != 1 || len(found.Data.Sources[0].Dropped) != 1 || found.Data.Sources[0].Dropped[0].Reason != "relabel" ||
		len(found.Data.Sources[0].Active) != 0 || found.Data.Sources[0].Dropped[0].Line != 4 {
		t.Errorf("?target=127.0.0.1:28003: %+v, want the one relabel drop, at line 4 of sd.yml", found.Data.Sources)
	}
	page := getBody(t, p.base+"/status/discovery")
	for _, want := range []string{`data-backend="one"`, `data-reason="relabel"`, `data-reason="invalid"`, `data-reason="name_clash"`, "alice:xxxxx@"} {
		if !strings.Contains(page, want) {
			t.Errorf("/status/discovery lacks %s", want)
		}
	}
	for what, text := range map[string]string{"the JSON view": getBody(t, p.base+"/api/v1/discovery"), "the page": page, "the log": p.output.String()} {
		if strings.Contains(text, "hunter2") {
			t.Errorf("%s shows the password", what)
		}
	}
	if !strings.Contains(getBody(t, p.base+"/status"), `href="/status/discovery"`) {
		t.Error("/status does not link /status/discovery")
	}
	if got := metricValue(t, p.base, `probegate_discovery_dropped_targets_total{reason="invalid"}`); got < 1 {
		t.Errorf(`probegate_discovery_dropped_targets_total{reason="invalid"} = %v, want at least 1`, got)
	}
}
