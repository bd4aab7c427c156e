package discovery

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery/targetgroup"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// setOf is the target set of cfg's block at field.
func setOf(t *testing.T, cfg *config.Config, field string) string {
	t.Helper()
	for _, e := range entries(cfg) {
		if e.field == field {
			return e.set
		}
	}
	t.Fatalf("no block %s", field)
	return ""
}

func targetNames(targets []pool.Target) []string {
	names := make([]string, len(targets))
	for i, tg := range targets {
		names[i] = tg.Name
	}
	return names
}

// TestReloadWaitsForTheReplacingBlocksFirstDelivery: after a reload that
// changes one file_sd block's refresh interval and removes another, the
// manager's first update reports the changed block's new set empty, as
// it does for every set its discoverer has not delivered yet: the
// backends of the changed block stay (the block it replaced stands in)
// until the new discoverer delivers, and the removed block's backends
// leave at once, standing in for nothing.
func TestReloadWaitsForTheReplacingBlocksFirstDelivery(t *testing.T) {
	dir := t.TempDir()
	kept, gone := filepath.Join(dir, "kept.yml"), filepath.Join(dir, "gone.yml")
	before, err := config.Load(writeConfig(t, dir, "file_sd_configs:\n  - files: ["+kept+"]\n  - files: ["+gone+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := config.Load(writeConfig(t, dir, "file_sd_configs:\n  - files: ["+kept+"]\n    refresh_interval: 1m\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d, err := New(ctx, log.NewNopLogger(), slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	group := func(file, address string) []*targetgroup.Group {
		return []*targetgroup.Group{{Source: file + ":0", Targets: []model.LabelSet{{addressLabel: model.LabelValue(address)}}}}
	}
	keptSet, goneSet, newSet := setOf(t, before, "file_sd_configs[0]"), setOf(t, before, "file_sd_configs[1]"), setOf(t, after, "file_sd_configs[0]")

	// The discoverers of both blocks delivered; the manager reports them.
	d.deliveries.delivered(keptSet)
	d.deliveries.delivered(goneSet)
	d.received(map[string][]*targetgroup.Group{keptSet: group(kept, "10.0.0.1:80"), goneSet: group(gone, "10.0.0.2:80")})
	if got := targetNames(d.Targets(before)); !slices.Equal(got, []string{"10.0.0.1:80", "10.0.0.2:80"}) {
		t.Fatalf("backends before the reload %v", got)
	}

	// The reload: the manager starts the changed block's discoverer and
	// stops both old sets.
	if got := targetNames(d.Targets(after)); !slices.Equal(got, []string{"10.0.0.1:80"}) {
		t.Errorf("backends as the reload is applied %v, want the changed block's alone", got)
	}
	d.deliveries.started(newSet)
	d.received(map[string][]*targetgroup.Group{newSet: {}})
	if got := targetNames(d.Targets(after)); !slices.Equal(got, []string{"10.0.0.1:80"}) {
		t.Errorf("backends at the manager's first update after the reload %v, want the changed block's kept until its discoverer delivers", got)
	}

	// The new discoverer delivers: its own targets count, and the old
	// block no longer stands in.
	d.deliveries.delivered(newSet)
	d.received(map[string][]*targetgroup.Group{newSet: group(kept, "10.0.0.3:80")})
	if got := targetNames(d.Targets(after)); !slices.Equal(got, []string{"10.0.0.3:80"}) {
		t.Errorf("backends after the new discoverer delivered %v, want its own alone", got)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.prev != nil || len(d.groups) != 1 {
		t.Errorf("after the reload settled: prev kept %v, %d sets' groups kept, want none and one", d.prev != nil, len(d.groups))
	}
}

// sendOnce is a discoverer that sends its groups once it is told to, then
// waits for the end.
type sendOnce struct {
	send   chan struct{}
	groups []*targetgroup.Group
}

func (s sendOnce) Run(ctx context.Context, up chan<- []*targetgroup.Group) {
	select {
	case <-s.send:
	case <-ctx.Done():
		return
	}
	select {
	case up <- s.groups:
	case <-ctx.Done():
	}
	<-ctx.Done()
}

// TestDeliveringDiscovererRecordsItsFirstSend: a block's set counts as
// delivered only once its discoverer's first send reached the manager,
// even when that send holds no target.
func TestDeliveringDiscovererRecordsItsFirstSend(t *testing.T) {
	ds := &deliveries{}
	ds.started("file/x")
	inner := sendOnce{send: make(chan struct{}), groups: []*targetgroup.Group{}}
	w := &deliveringDiscoverer{inner: inner, set: "file/x", deliveries: ds}
	ctx, cancel := context.WithCancel(context.Background())
	up := make(chan []*targetgroup.Group)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, up)
	}()
	defer func() {
		cancel()
		<-done
	}()
	if ds.hasDelivered("file/x") {
		t.Fatal("delivered before the discoverer sent")
	}
	close(inner.send)
	select {
	case <-up:
	case <-time.After(10 * time.Second):
		t.Fatal("the send was not forwarded")
	}
	for range 1000 {
		if ds.hasDelivered("file/x") {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Error("the forwarded send was not recorded")
}
