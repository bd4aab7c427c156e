package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	sd "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/file"
	"github.com/prometheus/prometheus/model/relabel"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/probe"
	"github.com/probegate/probegate/config"
)

// backend is a loopback server that counts the probes it answers.
type backend struct {
	*httptest.Server
	probes atomic.Int64
}

func serve(t *testing.T) *backend {
	t.Helper()
	b := &backend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { b.probes.Add(1) }))
	t.Cleanup(b.Close)
	return b
}

// rig is a Reconciler over a real pool, prober and file discovery, all
// running until the test ends.
type rig struct {
	*Reconciler
	pool *pool.Pool
	// sdFile is the file discovery watches.
	sdFile string
}

// baseConfig probes every 50ms, and discovers from dir/sd.yml.
func baseConfig(dir string, backends ...config.Backend) *config.Config {
	cfg := config.Default()
	cfg.HealthProbe.Interval = model.Duration(50 * time.Millisecond)
	cfg.HealthProbe.Timeout = model.Duration(50 * time.Millisecond)
	cfg.FileSDConfigs = []*file.SDConfig{{Files: []string{filepath.Join(dir, "sd.yml")}, RefreshInterval: file.DefaultSDConfig.RefreshInterval}}
	cfg.Backends = backends
	return cfg
}

func start(t *testing.T, cfg *config.Config) *rig {
	t.Helper()
	logger := log.NewNopLogger()
	p := pool.New(logger, time.Now)
	if err := p.Apply(discovery.Static(cfg), pool.SettingsOf(cfg)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	prober := probe.NewProber(p, logger, nil)
	d, err := discovery.New(ctx, logger, slog.New(slog.DiscardHandler), prometheus.NewRegistry(), sd.Updatert(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ApplyConfig(cfg); err != nil {
		t.Fatal(err)
	}
	r := &rig{Reconciler: New(p, prober, d, cfg, logger), pool: p, sdFile: cfg.FileSDConfigs[0].Files[0]}
	var wg sync.WaitGroup
	wg.Go(func() { prober.Run(ctx) })
	wg.Go(r.Run)
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return r
}

// names are the pool's backends.
func (r *rig) names() []string {
	var names []string
	for _, b := range r.pool.Backends() {
		names = append(names, b.Name)
	}
	return names
}

// discover has the discovery file list url as the backend name.
func (r *rig) discover(t *testing.T, name, url string) {
	t.Helper()
	content := `[{targets: ["` + strings.TrimPrefix(url, "http://") + `"], labels: {backend: ` + name + `}}]`
	if err := os.WriteFile(r.sdFile+".tmp", []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(r.sdFile+".tmp", r.sdFile); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every 10ms for up to 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestApplyAndDiscoveryRebuildThePoolAndTheProberFollows: a reload's new
// backend and a discovered one each join the pool and are probed, with no
// call but Apply and Run; a discovery update after a reload keeps the
// reload's backends; a configuration the pool refuses changes nothing.
func TestApplyAndDiscoveryRebuildThePoolAndTheProberFollows(t *testing.T) {
	dir := t.TempDir()
	a, b, found := serve(t), serve(t), serve(t)
	before := baseConfig(dir, config.Backend{Name: "a", URL: a.URL})
	r := start(t, before)
	waitFor(t, "a probed", func() bool { return a.probes.Load() > 0 })

	reloaded := baseConfig(dir, config.Backend{Name: "a", URL: a.URL}, config.Backend{Name: "b", URL: b.URL})
	if err := r.Apply(reloaded); err != nil {
		t.Fatal(err)
	}
	if got := r.names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("after the reload the pool is %v, want a and b", got)
	}
	waitFor(t, "the reload's new backend probed", func() bool { return b.probes.Load() > 0 })

	r.discover(t, "found", found.URL)
	waitFor(t, "the discovered backend in the pool", func() bool { return slices.Equal(r.names(), []string{"a", "b", "found"}) })
	waitFor(t, "the discovered backend probed", func() bool { return found.probes.Load() > 0 })
	if r.Running() != reloaded {
		t.Errorf("a discovery update changed the configuration in force")
	}

	refused := baseConfig(dir, config.Backend{Name: "a", URL: a.URL}, config.Backend{Name: "a", URL: b.URL})
	if err := r.Apply(refused); err == nil || !strings.Contains(err.Error(), `two backends are named "a"`) {
		t.Errorf("Apply of two backends named a: %v", err)
	}
	if got := r.names(); r.Running() != reloaded || !slices.Equal(got, []string{"a", "b", "found"}) {
		t.Errorf("a refused configuration changed the pool to %v or the configuration in force", got)
	}
}

// TestDetectLoopsDropsWhatWasAlreadyApplied: a discovered backend that the
// rule, once known, calls a loop leaves the pool at once, without waiting
// for discovery's next update.
func TestDetectLoopsDropsWhatWasAlreadyApplied(t *testing.T) {
	dir := t.TempDir()
	self := serve(t)
	r := start(t, baseConfig(dir))
	r.discover(t, "self", self.URL)
	waitFor(t, "the discovered backend in the pool", func() bool { return slices.Equal(r.names(), []string{"self"}) })
	r.DetectLoops(func(url string) bool { return url == self.URL })
	if got := r.names(); len(got) != 0 {
		t.Errorf("after DetectLoops the pool is %v, want the loop dropped", got)
	}
}

// TestReloadChangesDiscoveryAndRelabellingTogether: a reload that removes
// a file_sd block together with the relabelling rule that dropped its
// target never admits that target: not when the reload is applied, while
// discovery still holds the removed block's last targets, and not at the
// discovery updates after it.
func TestReloadChangesDiscoveryAndRelabellingTogether(t *testing.T) {
	// The other block either stays as it is, or changes too, which has
	// the removed block stand in until the manager reports the new one.
	for _, changeTheOther := range []bool{false, true} {
		t.Run(fmt.Sprintf("the other block changed: %v", changeTheOther), func(t *testing.T) {
			reloadDroppingABlockAndItsRule(t, changeTheOther)
		})
	}
}

func reloadDroppingABlockAndItsRule(t *testing.T, changeTheOther bool) {
	dir := t.TempDir()
	kept, dropped := serve(t), serve(t)
	old := filepath.Join(dir, "old.yml")
	content := `[{targets: ["` + strings.TrimPrefix(dropped.URL, "http://") + `"], labels: {backend: dropped, env: old}}]`
	if err := os.WriteFile(old, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	before := baseConfig(dir)
	before.FileSDConfigs = append(before.FileSDConfigs, &file.SDConfig{Files: []string{old}, RefreshInterval: file.DefaultSDConfig.RefreshInterval})
	rule := &relabel.Config{SourceLabels: model.LabelNames{"env"}, Regex: relabel.MustNewRegexp("old"), Action: relabel.Drop,
		Separator: relabel.DefaultRelabelConfig.Separator, Replacement: relabel.DefaultRelabelConfig.Replacement, NameValidationScheme: model.UTF8Validation}
	before.RelabelConfigs = []*relabel.Config{rule}
	r := start(t, before)
	r.discover(t, "kept", kept.URL)
	waitFor(t, "the old file's target discovered and dropped", func() bool {
		r.refresh()
		for _, s := range r.sd.View("").Sources {
			if s.File == old && s.DroppedCounts["relabel"] == 1 {
				return slices.Equal(r.names(), []string{"kept"})
			}
		}
		return false
	})

	after := baseConfig(dir)
	if changeTheOther {
		after.FileSDConfigs[0].RefreshInterval = model.Duration(time.Minute)
	}
	if err := r.Apply(after); err != nil {
		t.Fatal(err)
	}
	if names := r.names(); !slices.Equal(names, []string{"kept"}) {
		t.Fatalf("backends %v as the reload is applied, want kept alone: the removed block's target was admitted under the new rules", names)
	}
	// The updates after the reload: the removed block's set is gone.
	for range 3 {
		r.refresh()
		if names := r.names(); slices.Contains(names, "dropped") {
			t.Fatalf("backends %v after the reload, want no dropped", names)
		}
		time.Sleep(60 * time.Millisecond)
	}
	if n := dropped.probes.Load(); n != 0 {
		t.Errorf("the dropped target was probed %d times", n)
	}
}

// TestReloadThatChangesABlockKeepsItsBackends: a reload that changes a
// discovery block (its refresh interval) makes it a new target set, which
// the manager reports only at its next update; meanwhile the old block
// stands in for it, so its backends stay in the pool with their state,
// as the same backends.
func TestReloadThatChangesABlockKeepsItsBackends(t *testing.T) {
	dir := t.TempDir()
	kept := serve(t)
	before := baseConfig(dir)
	r := start(t, before)
	r.discover(t, "kept", kept.URL)
	waitFor(t, "the discovered backend", func() bool {
		r.refresh()
		return slices.Equal(r.names(), []string{"kept"})
	})
	first := r.pool.Backends()[0]

	after := baseConfig(dir)
	after.FileSDConfigs[0].RefreshInterval = model.Duration(time.Minute)
	if err := r.Apply(after); err != nil {
		t.Fatal(err)
	}
	if b := r.pool.Backends(); len(b) != 1 || b[0] != first {
		t.Fatalf("backends %v as the reload is applied, want the same kept backend", r.names())
	}
	waitFor(t, "the changed block reported", func() bool {
		r.refresh()
		return r.sd.View("").Sources[0].Backends == 1 && len(r.sd.View("").Sources) == 1
	})
	if b := r.pool.Backends(); len(b) != 1 || b[0] != first {
		t.Errorf("backends %v after the update, want the same kept backend", r.names())
	}
}
