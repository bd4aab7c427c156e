package discovery

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sd "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/file"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/syncbuffer"
)

// running is a Discovery running with its manager until the test ends,
// signalling each update it receives.
type running struct {
	*Discovery
	reg     *prometheus.Registry
	updates chan struct{}
	logs    *syncbuffer.Buffer
}

func startDiscovery(t *testing.T, cfg *config.Config) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{reg: prometheus.NewRegistry(), updates: make(chan struct{}, 1), logs: &syncbuffer.Buffer{}}
	d, err := New(ctx, log.NewLogfmtLogger(r.logs), slog.New(slog.NewTextHandler(r.logs, nil)), r.reg, sd.Updatert(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	r.Discovery = d
	if err := d.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(func() {
			select {
			case r.updates <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

// waitNames waits, for at most 10 s, until the targets under cfg have
// the names want, and returns them.
func (r *running) waitNames(t *testing.T, cfg *config.Config, want ...string) []pool.Target {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		targets := r.Targets(cfg)
		var names []string
		for _, tg := range targets {
			names = append(names, tg.Name)
		}
		if slices.Equal(names, want) {
			return targets
		}
		select {
		case <-r.updates:
		case <-deadline:
			t.Fatalf("backends %v, want %v", names, want)
		}
	}
}

// write replaces path's content the way an editor or a config manager
// does: a new file renamed over the old one.
func write(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestFileDiscoveryWithTheRealManager: backends listed in watched files
// join, leave and change name as the files change; a backend that stays
// keeps its pool object and state; a file that becomes unreadable keeps
// its last targets while other files still update; a static backend
// wins a name clash, which is logged and counted once.
func TestFileDiscoveryWithTheRealManager(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yml"), filepath.Join(dir, "b.yml")
	write(t, a, `[{targets: ["127.0.0.1:1", "127.0.0.1:2"]}]`)
	cfg := config.Default()
	cfg.FileSDConfigs = []*file.SDConfig{{Files: []string{filepath.Join(dir, "*.yml")}, RefreshInterval: file.DefaultSDConfig.RefreshInterval}}
	cfg.Backends = []config.Backend{{Name: "static", URL: "http://127.0.0.1:9"}}
	r := startDiscovery(t, cfg)

	p := pool.New(log.NewNopLogger(), time.Now)
	apply := func(targets []pool.Target) map[string]*pool.Backend {
		t.Helper()
		if err := p.Apply(targets, pool.SettingsOf(cfg)); err != nil {
			t.Fatal(err)
		}
		byName := map[string]*pool.Backend{}
		for _, b := range p.Backends() {
			byName[b.Name] = b
		}
		return byName
	}
	first := apply(r.waitNames(t, cfg, "static", "127.0.0.1:1", "127.0.0.1:2"))
	if got := testutil.ToFloat64(r.backends.WithLabelValues("file")); got != 2 {
		t.Errorf("probegate_discovered_backends{mechanism=file} = %v, want 2", got)
	}

	// Add one, remove one, rename one: the one that stays is the same
	// backend.
	write(t, a, `[{targets: ["127.0.0.1:1", "127.0.0.1:3"]}, {targets: ["127.0.0.1:2"], labels: {backend: renamed}}]`)
	second := apply(r.waitNames(t, cfg, "static", "127.0.0.1:1", "127.0.0.1:3", "renamed"))
	if second["127.0.0.1:1"] != first["127.0.0.1:1"] {
		t.Error("a backend present in both results is a new object: it lost its state")
	}

	// An unreadable file keeps its targets, while another file's change
	// still comes through.
	reads := func() float64 { return gathered(t, r.reg, "prometheus_sd_file_read_errors_total") }
	write(t, a, `[{targets: [`)
	deadline := time.Now().Add(10 * time.Second)
	for reads() == 0 && time.Now().Before(deadline) {
		select {
		case <-r.updates:
		case <-time.After(50 * time.Millisecond):
		}
	}
	if reads() == 0 {
		t.Fatal("the broken file was never read")
	}
	write(t, b, `[{targets: ["127.0.0.1:4"]}]`)
	third := apply(r.waitNames(t, cfg, "static", "127.0.0.1:1", "127.0.0.1:3", "127.0.0.1:4", "renamed"))
	if third["127.0.0.1:1"] != first["127.0.0.1:1"] {
		t.Error("a broken file replaced the backends it listed")
	}

	// A removed file's targets leave.
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	r.waitNames(t, cfg, "static", "127.0.0.1:4")

	// Clash: logged and counted once however many updates see it.
	write(t, b, `[{targets: ["127.0.0.1:4"], labels: {backend: static}}, {targets: ["127.0.0.1:5"]}]`)
	r.waitNames(t, cfg, "static", "127.0.0.1:5")
	r.Targets(cfg)
	r.Targets(cfg)
	if got := testutil.ToFloat64(r.clashes); got != 1 {
		t.Errorf("probegate_discovery_name_clashes_total = %v after one clash seen three times, want 1", got)
	}
	if got := strings.Count(r.logs.String(), "their name is taken"); got != 1 {
		t.Errorf("the clash was logged %d times, want once:\n%s", got, r.logs)
	}
	if targets := r.Targets(cfg); targets[0].URL != "http://127.0.0.1:9" {
		t.Errorf("the static backend lost the clash: %+v", targets[0])
	}

	// A group named like the static backend would swallow it: its
	// members are left out as name clashes too, and the log says why.
	write(t, b, `[{targets: ["127.0.0.1:5", "127.0.0.1:6"], labels: {group: static}}, {targets: ["127.0.0.1:7"]}]`)
	r.waitNames(t, cfg, "static", "127.0.0.1:7")
	if got := testutil.ToFloat64(r.clashes); got != 3 {
		t.Errorf("probegate_discovery_name_clashes_total = %v after two members of a group named static, want 3", got)
	}
	if got := strings.Count(r.logs.String(), "(its group static is the name of a backend outside it, taken by static)"); got != 2 {
		t.Errorf("the group clash names %d backends in the log, want the two members once each:\n%s", got, r.logs)
	}
}

// gathered is the value of the single series of family name on reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			var sum float64
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	return 0
}
