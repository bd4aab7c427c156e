package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostileDiscoveryVolume: a file_sd file of 100,000 invalid targets,
// each with a password, and 500 valid ones costs a few log lines, not a
// line a target; none shows a password; the pool takes
// max_discovered_backends backends; every drop is counted by reason; and
// the resident memory stays bounded.
func TestHostileDiscoveryVolume(t *testing.T) {
	const invalid, valid, limit = 100000, 500, 50
	dir := t.TempDir()
	sdDir := filepath.Join(dir, "sd")
	if err := os.Mkdir(sdDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("- targets: [")
	for i := range invalid {
		fmt.Fprintf(&b, `"alice:hunter2@10.%d.%d.%d", `, i>>16, i>>8&255, i&255)
	}
	for i := range valid {
		fmt.Fprintf(&b, `"10.200.%d.%d:80", `, i>>8, i&255)
	}
	b.WriteString("]\n")
	writeAtomically(t, filepath.Join(sdDir, "hostile.yml"), b.String())
	cfg := filepath.Join(dir, "probegate.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("health_probe: {enabled: false}\nmax_discovered_backends: %d\nfile_sd_configs: [{files: [sd/*.yml]}]\n", limit)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProbegate(t, "--config.file="+cfg, "--discovery.update-interval=100ms")
	waitFor(t, 60*time.Second, "the hostile file's targets evaluated", func() bool {
		return metricValue(t, p.base, `probegate_discovered_backends{mechanism="file"}`) == limit
	})
	log := p.output.String()
	if lines := strings.Count(log, "\n"); lines > 30 {
		t.Errorf("%d log lines for %d bad targets, want a few:\n%.3000s", lines, invalid, log)
	}
	if strings.Contains(log, "hunter2") {
		t.Error("the log shows the password")
	}
	if !strings.Contains(log, fmt.Sprintf("count=%d", invalid)) || !strings.Contains(log, fmt.Sprintf("count=%d", valid-limit)) {
		t.Errorf("the log lacks the summaries of %d invalid targets and %d over the limit:\n%.3000s", invalid, valid-limit, log)
	}
	if got := metricValue(t, p.base, `probegate_discovery_dropped_targets_total{reason="invalid"}`); got < invalid || int(got)%invalid != 0 {
		t.Errorf(`dropped_targets_total{reason="invalid"} = %v, want a multiple of %d (once per update)`, got, invalid)
	}
	if got := metricValue(t, p.base, `probegate_discovery_dropped_targets_total{reason="limit"}`); got < valid-limit {
		t.Errorf(`dropped_targets_total{reason="limit"} = %v, want at least %d`, got, valid-limit)
	}
	// The discovery library holds the parsed file (about 1 KiB a target);
	// probegate adds its bounded view, not a copy per target.
	if peak := statusKiB(p.cmd.Process.Pid, "VmHWM:"); peak > 400<<10 {
		t.Errorf("peak resident memory %d MiB, want at most 400 MiB", peak>>10)
	} else {
		t.Logf("peak resident memory %d MiB for %d targets", peak>>10, invalid+valid)
	}
}
