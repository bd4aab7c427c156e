package discovery

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/discovery/file"

	"github.com/probegate/probegate/config"
)

// TestHostileVolumeIsOneLineAndBounded: a file listing tens of thousands
// of invalid targets and more valid ones than max_discovered_backends is
// logged as one line per kind and update, with a count and at most three
// examples; the pool gets the limit of backends; every drop is counted by
// reason; the view keeps at most maxShownDropped dropped targets, and an
// example of every reason beyond them. Asking
// for the targets again without a new update logs and counts nothing
// more.
func TestHostileVolumeIsOneLineAndBounded(t *testing.T) {
	const invalid, valid, limit = 20000, 50, 10
	var b strings.Builder
	b.WriteString("- targets: [")
	for i := range invalid {
		fmt.Fprintf(&b, "%q, ", fmt.Sprintf("alice:hunter2@10.0.%d.%d", i/256, i%256))
	}
	for i := range valid {
		fmt.Fprintf(&b, "%q, ", fmt.Sprintf("10.1.0.%d:80", i))
	}
	b.WriteString("]\n")
	dir := t.TempDir()
	path := filepath.Join(dir, "sd.yml")
	write(t, path, b.String())
	cfg := config.Default()
	cfg.MaxDiscoveredBackends = limit
	cfg.FileSDConfigs = []*file.SDConfig{{Files: []string{path}, RefreshInterval: file.DefaultSDConfig.RefreshInterval}}
	r := startDiscovery(t, cfg)
	var wantNames []string
	for i := range valid {
		wantNames = append(wantNames, fmt.Sprintf("10.1.0.%d:80", i))
	}
	slices.Sort(wantNames)
	wantNames = wantNames[:limit]
	r.waitNames(t, cfg, wantNames...)
	r.Targets(cfg)
	r.Targets(cfg)

	logs := r.logs.String()
	if n := strings.Count(logs, "\n"); n > 10 {
		t.Errorf("%d log lines for one update, want a few:\n%.2000s", n, logs)
	}
	if got := strings.Count(logs, "are not backends"); got != 1 {
		t.Errorf("invalid targets logged in %d lines, want one", got)
	}
	if !strings.Contains(logs, fmt.Sprintf("count=%d", invalid)) || strings.Count(logs, "is not host:port") != maxExamples {
		t.Errorf("the summary line lacks the count %d or has not %d examples:\n%.2000s", invalid, maxExamples, logs)
	}
	if got := strings.Count(logs, "more backends than"); got != 1 || !strings.Contains(logs, fmt.Sprintf("count=%d", valid-limit)) {
		t.Errorf("the limit was logged in %d lines, want one with count=%d:\n%.2000s", got, valid-limit, logs)
	}
	if strings.Contains(logs, "hunter2") {
		t.Error("the log shows the password")
	}
	for reason, want := range map[string]float64{dropInvalid: invalid, dropLimit: valid - limit, dropRelabel: 0, dropNameClash: 0, dropLoop: 0} {
		if got := testutil.ToFloat64(r.dropped.WithLabelValues(reason)); got != want {
			t.Errorf("probegate_discovery_dropped_targets_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}
	v := r.View("")
	if len(v.Sources) != 1 || v.Sources[0].Mechanism != "file" || v.Sources[0].File != path || v.Sources[0].Config != "file_sd_configs[0]" {
		t.Fatalf("%d view sources, the first %s %s %s; want the one file of file_sd_configs[0]", len(v.Sources), v.Sources[0].Mechanism, v.Sources[0].Config, v.Sources[0].File)
	}
	file := v.Sources[0]
	// The first maxShownDropped, all invalid, and the first dropped for
	// the limit, its reason's example.
	if file.Targets != invalid+valid || file.Backends != limit || len(file.Active) != limit || len(file.Dropped) != maxShownDropped+1 ||
		file.Dropped[maxShownDropped].Reason != dropLimit ||
		file.DroppedCounts[dropInvalid] != invalid || file.DroppedCounts[dropLimit] != valid-limit {
		t.Errorf("view: %d targets, %d backends, %d active, %d dropped shown, counts %v", file.Targets, file.Backends, len(file.Active), len(file.Dropped), file.DroppedCounts)
	}
	if a := file.Active[0]; a.Backend != wantNames[0] || a.Labels["__address__"] != wantNames[0] || a.Source == "" {
		t.Errorf("first active target %+v, want %s with its labels and source", a, wantNames[0])
	}
	if d := file.Dropped[0]; d.Reason != dropInvalid || !strings.Contains(d.Labels["__address__"], "alice:xxxxx@") || d.Error == "" {
		t.Errorf("first dropped target %+v, want an invalid one with its redacted address and error", d)
	}
}
