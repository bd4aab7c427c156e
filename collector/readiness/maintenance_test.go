package readiness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/deadport"
	"github.com/probegate/probegate/internal/syncbuffer"
)

// unreachableEtcd is a pool of backends a and b whose maintenance is kept
// in an etcd cluster at a port that refuses connections, with timeouts
// far longer than a test waits.
func unreachableEtcd(t *testing.T) (config.Maintenance, *pool.Pool) {
	t.Helper()
	url, release, err := deadport.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release() })
	cfg := config.Default()
	cfg.Backends = []config.Backend{{Name: "a", URL: "http://127.0.0.1:1"}, {Name: "b", URL: "http://127.0.0.1:2"}}
	cfg.Maintenance.Store = config.StoreEtcd
	cfg.Maintenance.Etcd.Endpoints = []string{url}
	cfg.Maintenance.Etcd.DialTimeout = model.Duration(time.Hour)
	cfg.Maintenance.Etcd.RequestTimeout = model.Duration(time.Hour)
	p := pool.New(log.NewNopLogger(), time.Now)
	if err := p.Apply(discovery.Static(cfg), pool.SettingsOf(cfg)); err != nil {
		t.Fatal(err)
	}
	return cfg.Maintenance, p
}

// openInTime opens maintenance over cfg and p and fails the test unless
// Open returns well within the store's request timeout; the store is
// closed when the test ends.
func openInTime(t *testing.T, cfg config.Maintenance, p *pool.Pool, dir string, logs *syncbuffer.Buffer) *Maintenance {
	t.Helper()
	type opened struct {
		m   *Maintenance
		err error
	}
	done := make(chan opened, 1)
	go func() {
		m, err := Open(cfg, p, Options{Replica: "gate-a", StorageDir: dir, AdminAPI: true, Registerer: prometheus.NewRegistry(),
			Logger: log.NewLogfmtLogger(logs)})
		done <- opened{m, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatal(o.err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			o.m.Run(ctx) // Returns at once, and closes the store.
		})
		return o.m
	case <-time.After(30 * time.Second):
		t.Fatalf("Open waited for an unreachable store (request_timeout %s):\n%s", cfg.Etcd.RequestTimeout, logs)
		return nil
	}
}

// TestOpenDoesNotWaitForTheStore: with a shared store that cannot be
// reached and no saved state, Open returns at once, not synced: the
// replica listens, and is not ready until its first read.
func TestOpenDoesNotWaitForTheStore(t *testing.T) {
	cfg, p := unreachableEtcd(t)
	var logs syncbuffer.Buffer
	m := openInTime(t, cfg, p, t.TempDir(), &logs)
	if st := m.Status(); st.Synced || !st.Stale || st.Healthy {
		t.Errorf("store status %+v; want not synced, stale and unhealthy", st)
	}
	if out := logs.String(); !strings.Contains(out, "No maintenance state saved yet; not ready until the store answers") {
		t.Errorf("the start-up log does not say the replica waits for the store:\n%s", out)
	}
}

// TestOpenServesTheSavedStateMarkedStale: with a shared store that cannot
// be reached and a saved state, Open returns at once with the saved
// entries in force, marked stale, and the start-up log says that one
// thing.
func TestOpenServesTheSavedStateMarkedStale(t *testing.T) {
	cfg, p := unreachableEtcd(t)
	dir := t.TempDir()
	saved := []entries.Entry{{Backend: "a", Reason: "disk", Since: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), By: "op"}}
	if err := store.NewApplied(dir, store.SourceOf(cfg)).Write(store.State{Revision: 7, Token: 5, Entries: saved}); err != nil {
		t.Fatal(err)
	}
	var logs syncbuffer.Buffer
	m := openInTime(t, cfg, p, dir, &logs)
	if got := p.Maintenances(); len(got) != 1 || got[0].Backend != "a" {
		t.Errorf("entries in force %v; want the saved one of a", got)
	}
	if st := m.Status(); !st.Synced || !st.Stale {
		t.Errorf("store status %+v; want synced from the saved state, and stale", st)
	}
	out := logs.String()
	if !strings.Contains(out, "Serving the last applied maintenance state until the store answers") {
		t.Errorf("the start-up log does not say it serves the saved state:\n%s", out)
	}
	if strings.Contains(out, "without its entries") || strings.Contains(out, "No maintenance state saved") {
		t.Errorf("the start-up log contradicts itself:\n%s", out)
	}
}
