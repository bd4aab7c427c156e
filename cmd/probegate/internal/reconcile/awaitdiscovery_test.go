package reconcile

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config"
)

// TestPoolWaitsForDiscoverysFirstDelivery: from start until the file
// discovery block has delivered, the pool names it as awaited, and the
// moment it stops doing so the pool holds the block's targets: a pool
// that discovery has not filled yet is never taken for the whole pool.
// Once delivered, the wait does not come back, not with a reload.
func TestPoolWaitsForDiscoverysFirstDelivery(t *testing.T) {
	dir := t.TempDir()
	static, found := serve(t), serve(t)
	cfg := baseConfig(dir, config.Backend{Name: "static", URL: static.URL})
	// File discovery sets its directory watch after its first read: a
	// file written in between is read at the next refresh only.
	cfg.FileSDConfigs[0].RefreshInterval = model.Duration(200 * time.Millisecond)
	r := start(t, cfg)
	if got := r.pool.AwaitedDiscovery(); !slices.Equal(got, []string{"file_sd_configs[0]"}) {
		t.Fatalf("before discovery delivered, the pool awaits %v; want file_sd_configs[0]", got)
	}
	r.discover(t, "found", found.URL)
	waitFor(t, "the pool no longer waiting for discovery", func() bool {
		if len(r.pool.AwaitedDiscovery()) > 0 {
			return false
		}
		if got := r.names(); !slices.Equal(got, []string{"static", "found"}) {
			t.Fatalf("the pool stopped waiting for discovery while it was %v, without the discovered backend", got)
		}
		return true
	})
	reloaded := baseConfig(dir, config.Backend{Name: "static", URL: static.URL})
	reloaded.FileSDConfigs[0].RefreshInterval = cfg.FileSDConfigs[0].RefreshInterval
	reloaded.FileSDConfigs[0].Files = append(reloaded.FileSDConfigs[0].Files, dir+"/other.yml")
	if err := r.Apply(reloaded); err != nil {
		t.Fatal(err)
	}
	if got := r.pool.AwaitedDiscovery(); len(got) != 0 {
		t.Errorf("after a reload that changed the block, the pool awaits %v again; want the first delivery alone waited for", got)
	}
}
