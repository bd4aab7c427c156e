package readiness

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/gate"
	"github.com/probegate/probegate/internal/silentport"
	"github.com/probegate/probegate/internal/syncbuffer"
)

// TestStoreCheck is the maintenance_store check, case by case: not
// ready until the first read of the store has finished, saved state or
// not; then ready on a saved state, marked stale, and not ready without
// one until a read succeeds.
func TestStoreCheck(t *testing.T) {
	for _, tc := range []struct {
		name     string
		done     bool
		status   maintenance.StoreStatus
		output   string
		failsFor string
	}{
		{name: "first read in flight, saved state", status: maintenance.StoreStatus{Synced: true, Stale: true}, failsFor: "reading the store for the first time"},
		{name: "first read in flight, nothing saved", status: maintenance.StoreStatus{Stale: true}, failsFor: "reading the store for the first time"},
		{name: "first read failed, nothing saved", done: true, status: maintenance.StoreStatus{Stale: true}, failsFor: "not synced with the store yet"},
		{name: "first read failed, saved state", done: true, status: maintenance.StoreStatus{Synced: true, Stale: true},
			output: "stale: serving the last applied state until the store answers"},
		{name: "read", done: true, status: maintenance.StoreStatus{Synced: true, Healthy: true}, output: "synced"},
	} {
		output, err := storeCheck(tc.done, tc.status)
		switch {
		case tc.failsFor != "" && (err == nil || err.Error() != tc.failsFor):
			t.Errorf("%s: %q, %v; want it to fail: %s", tc.name, output, err, tc.failsFor)
		case tc.failsFor == "" && (err != nil || output != tc.output):
			t.Errorf("%s: %q, %v; want it to pass: %s", tc.name, output, err, tc.output)
		}
	}
}

// TestNotReadyUntilTheFirstReadEnds: a replica restarted with a saved
// state, whose etcd accepts connections and never answers, listens (Open
// returns) and routes by its saved entries, but is not ready while its
// first read of the store waits: an entry granted while it was down
// would not be in force here.
func TestNotReadyUntilTheFirstReadEnds(t *testing.T) {
	cfg, p := unreachableEtcd(t)
	cfg.Etcd.Endpoints = []string{"http://" + silentport.Listen(t)}
	cfg.Etcd.DialTimeout, cfg.Etcd.RequestTimeout = model.Duration(time.Hour), model.Duration(time.Hour)
	dir := t.TempDir()
	saved := []entries.Entry{{Backend: "a", Reason: "disk", Since: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}}
	if err := store.NewApplied(dir, store.SourceOf(cfg)).Write(store.State{Revision: 7, Token: 5, Entries: saved}); err != nil {
		t.Fatal(err)
	}
	var logs syncbuffer.Buffer
	m, err := Open(cfg, p, Options{Replica: "gate-a", StorageDir: dir, Registerer: prometheus.NewRegistry(), Logger: log.NewLogfmtLogger(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	g := gate.New(gate.Options{})
	m.RegisterChecks(g, func() bool { return false })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.Run(ctx) })
	defer func() {
		cancel()
		wg.Wait()
	}()

	if got := p.Maintenances(); len(got) != 1 || got[0].Backend != "a" {
		t.Errorf("entries in force %+v while the first read waits; want the saved one of a", got)
	}
	rec := httptest.NewRecorder()
	g.ReadyHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ready", nil))
	var ready struct {
		Checks map[string]struct{ Status, Output string } `json:"checks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &ready); err != nil {
		t.Fatalf("/ready answered %d %q: %v", rec.Code, rec.Body, err)
	}
	c := ready.Checks["maintenance_store"]
	if rec.Code != http.StatusServiceUnavailable || c.Status != "fail" || !strings.Contains(c.Output, "reading the store for the first time") {
		t.Errorf("/ready = %d, maintenance_store %+v while the first read waits; want 503 failing, reading the store for the first time\n%s", rec.Code, c, logs.String())
	}
}
