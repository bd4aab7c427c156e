package discovery

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/config"
)

// TestViewCapsEachSourceAndFindsAnyTarget: one file dropping far more
// targets than the view shows crowds out no other file's drops; a reason
// present beyond the cap keeps an example; a group is located by its file
// and line; a mechanism that is not configured is not shown; and asking
// for one target finds it whatever the caps.
func TestViewCapsEachSourceAndFindsAnyTarget(t *testing.T) {
	dir := t.TempDir()
	crowded, quiet := filepath.Join(dir, "crowded.yml"), filepath.Join(dir, "quiet.yml")
	var b strings.Builder
	b.WriteString("- targets: [")
	for i := range 1500 {
		fmt.Fprintf(&b, "%q, ", fmt.Sprintf("bad%d", i))
	}
	b.WriteString("]\n- targets: [\"10.0.0.9:80\"]\n  labels: {env: test}\n")
	write(t, crowded, b.String())
	write(t, quiet, "# two groups\n- targets: [\"10.0.1.1:80\"]\n- targets: [\"10.0.1.2:80\"]\n  labels: {env: test}\n")
	cfg, err := config.Load(writeConfig(t, dir, "relabel_configs: [{source_labels: [env], regex: test, action: drop}]\nfile_sd_configs:\n  - files: ["+crowded+"]\n  - files: ["+quiet+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := startDiscovery(t, cfg)
	r.waitNames(t, cfg, "10.0.1.1:80")
	deadline := time.Now().Add(10 * time.Second)
	// Both files' groups in: the crowded one is read and relabelled last.
	delivered := func(v View) bool {
		return len(v.Sources) == 2 && v.Sources[0].File != "" && v.Sources[1].File != "" && v.Sources[0].DroppedCounts[dropInvalid] > 0
	}
	for !delivered(r.View("")) && time.Now().Before(deadline) {
		r.Targets(cfg)
		time.Sleep(20 * time.Millisecond)
	}

	v := r.View("")
	if len(v.Sources) != 2 {
		t.Fatalf("%d sources, want the two files and no dns section", len(v.Sources))
	}
	c, q := v.Sources[0], v.Sources[1]
	if c.Config != "file_sd_configs[0]" || c.File != crowded || c.ConfigLine != 3 || q.Config != "file_sd_configs[1]" || q.File != quiet || q.ConfigLine != 4 {
		t.Errorf("sources %s %s line %d and %s %s line %d, want file_sd_configs[0] at line 3 and [1] at line 4, with their files",
			c.Config, c.File, c.ConfigLine, q.Config, q.File, q.ConfigLine)
	}
	if len(c.Dropped) != maxShownDropped+1 || c.Dropped[maxShownDropped].Reason != dropRelabel || c.DroppedCounts[dropInvalid] != 1500 {
		t.Errorf("crowded file: %d dropped shown, counts %v; want %d and the relabel drop beyond them", len(c.Dropped), c.DroppedCounts, maxShownDropped+1)
	}
	if len(q.Dropped) != 1 || q.Dropped[0].Reason != dropRelabel || q.Dropped[0].Line != 3 || q.Dropped[0].File != quiet {
		t.Errorf("quiet file: dropped %+v, want its relabel drop, located at line 3 of %s", q.Dropped, quiet)
	}
	if len(q.Active) != 1 || q.Active[0].Line != 2 {
		t.Errorf("quiet file: backends %+v, want 10.0.1.1:80 located at line 2", q.Active)
	}

	found := r.View("bad1499")
	if len(found.Sources) != 1 || len(found.Sources[0].Dropped) != 1 || found.Sources[0].Dropped[0].Reason != dropInvalid ||
		found.Sources[0].Dropped[0].Labels["__address__"] != "bad1499" || found.Sources[0].Dropped[0].Error == "" {
		t.Errorf("search for bad1499, beyond the cap: %+v", found.Sources)
	} else if e := found.Sources[0].Dropped[0].Error; !strings.Contains(e, " at "+crowded+":1:") || strings.Contains(e, crowded+":0") {
		// The group is the file's first (index 0) and begins at line 1:
		// the error locates it as the view does, by file and line, and
		// never gives the index where a line is expected.
		t.Errorf("the error %q does not locate the group at %s:1", e, crowded)
	}
	if found := r.View("10.0.1.1:80"); len(found.Sources) != 1 || len(found.Sources[0].Active) != 1 || len(found.Sources[0].Dropped) != 0 {
		t.Errorf("search for a backend: %+v", found.Sources)
	}
	if found := r.View("10.9.9.9:80"); len(found.Sources) != 0 {
		t.Errorf("search for nothing: %+v", found.Sources)
	}
	// A search is a piece of an address, a backend name or its host:port,
	// in any case, and a URL stands for its host:port.
	for _, q := range []string{"10.0.1.1", "0.1.1:8", "http://10.0.1.1:80/metrics", "HTTP://10.0.1.1:80"} {
		if found := r.View(q); len(found.Sources) != 1 || len(found.Sources[0].Active) != 1 || len(found.Sources[0].Dropped) != 0 {
			t.Errorf("search for %q: %+v; want the backend 10.0.1.1:80", q, found.Sources)
		}
	}
	if found := r.View("10.0.1."); len(found.Sources) != 1 || len(found.Sources[0].Active) != 1 || len(found.Sources[0].Dropped) != 1 {
		t.Errorf("search for 10.0.1.: %+v; want the quiet file's backend and its dropped target", found.Sources)
	}
	if found := r.View("BAD1499"); len(found.Sources) != 1 || len(found.Sources[0].Dropped) != 1 || found.Sources[0].Dropped[0].Labels["__address__"] != "bad1499" {
		t.Errorf("search for BAD1499: %+v; want bad1499", found.Sources)
	}
}

// writeConfig writes a configuration file into dir.
func writeConfig(t *testing.T, dir, content string) string {
	t.Helper()
	path := filepath.Join(dir, "probegate.yml")
	write(t, path, content)
	return path
}
