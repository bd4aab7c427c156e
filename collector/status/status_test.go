package status

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testconfig"
)

func testPool(t *testing.T, now func() time.Time, urls ...string) *pool.Pool {
	t.Helper()
	probe := testconfig.Probe()
	var targets []pool.Target
	for i, u := range urls {
		targets = append(targets, pool.Target{Name: string(rune('a' + i)), URL: u, Probe: probe, ClientConfig: commoncfg.DefaultHTTPClientConfig})
	}
	p := pool.New(log.NewNopLogger(), now)
	if err := p.Apply(targets, pool.Settings{}); err != nil {
		t.Fatal(err)
	}
	return p
}

func get(t *testing.T, h http.Handler, target string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec
}

// TestPageShowsEveryBackendWithStateSinceAndDowntime: one row per
// backend carrying its state as text and as data, the time since the last
// change and the downtime; the URL's password is hidden; the last round
// names every backend's outcome.
func TestPageShowsEveryBackendWithStateSinceAndDowntime(t *testing.T) {
	start := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	now := start
	p := testPool(t, func() time.Time { return now }, "http://127.0.0.1:19001", "http://user:hunter2@127.0.0.1:19002")
	for range 3 {
		p.Backends()[0].RecordProbe(health.StatusResult(503))
	}
	now = now.Add(3 * time.Minute)
	round := &fanout.RoundSummary{Time: now, Contributed: 1, Configured: 2, Partial: true, Backends: []fanout.RoundBackend{
		{Name: "b", Outcome: fanout.OutcomeContributed, Status: 200},
		{Name: "a", Outcome: fanout.OutcomeSkipped, Reason: fanout.MissingMaintenance},
	}}
	h := Handler(Options{Pool: p, LastRound: func() *fanout.RoundSummary { return round }, Replica: "pg-eu-1", Instance: "host-1",
		Version: "1.2.3", Started: start, MetricsPath: "/metrics"})
	rec := get(t, h, "/status")
	body := rec.Body.String()
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	for _, want := range []string{
		`<tr data-backend="a" data-state="unhealthy"`,
		`<span class="badge state-unhealthy">unhealthy</span>`,
		`<tr data-backend="b" data-state="unknown"`,
		`<time datetime="2024-03-01T12:00:00Z" title="2024-03-01T12:00:00Z">3m0s ago</time>`,
		`<td class="num" data-field="downtime">3m0s</td>`,
		`http://user:xxxxx@127.0.0.1:19002`,
		`<tr data-round-backend="a" data-outcome="skipped">`, `<td>maintenance</td>`,
		`<tr data-round-backend="b" data-outcome="contributed">`,
		`<meta http-equiv="refresh" content="5">`,
		`href="?refresh=0"`,
		`Replica <strong data-field="replica">pg-eu-1</strong> on host <span data-field="instance">host-1</span>`, `<title>probegate status — pg-eu-1</title>`, `1.2.3`,
		`<td data-field="maintenance">—</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "hunter2") {
		t.Error("page shows the URL's password")
	}
}

// TestPauseAndBadRefresh: ?refresh=0 drops the meta refresh and offers to
// resume; a bad value is a 400 that says what is wanted.
func TestPauseAndBadRefresh(t *testing.T) {
	h := Handler(Options{Pool: testPool(t, nil, "http://127.0.0.1:19001"), Started: time.Now()})
	body := get(t, h, "/status?refresh=0").Body.String()
	if strings.Contains(body, `http-equiv="refresh"`) || !strings.Contains(body, `href="?refresh=5"`) {
		t.Errorf("paused page:\n%s", body)
	}
	if body := get(t, h, "/status?refresh=30").Body.String(); !strings.Contains(body, `content="30"`) {
		t.Error("refresh=30 does not reload every 30s")
	}
	// 18446744074 s is 2^64 ns and a third of a second: it must not wrap
	// into the range.
	for _, bad := range []string{"-1", "x", "3601", "18446744074"} {
		rec := get(t, h, "/status?refresh="+bad)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "whole seconds") {
			t.Errorf("refresh=%s: %d %q", bad, rec.Code, rec.Body.String())
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/status", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}

func TestHuman(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 850 * time.Millisecond: "850ms", 42 * time.Second: "42s",
		192 * time.Second: "3m12s", 5*time.Hour + 4*time.Minute: "5h4m", 51 * time.Hour: "2d3h",
	} {
		if got := human(d); got != want {
			t.Errorf("human(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestPageShowsMaintenance: a backend in maintenance shows the state and
// who took it out for what.
func TestPageShowsMaintenance(t *testing.T) {
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	p := testPool(t, func() time.Time { return now }, "http://127.0.0.1:19001", "http://127.0.0.1:19002")
	p.SetMaintenance([]entries.Entry{{Backend: "a", Reason: "kernel upgrade", By: "ops"}}, entries.KeptByClock)
	body := get(t, Handler(Options{Pool: p, Started: now, MetricsPath: "/metrics"}), "/status").Body.String()
	for _, want := range []string{
		`<tr data-backend="a" data-state="maintenance"`,
		`<td data-field="maintenance">kernel upgrade (by ops)</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestPageShowsStoreAndReplicas: the page says whether the maintenance
// store answers, lists the live replicas, and calls out backends in
// maintenance while the admin API is off.
func TestPageShowsStoreAndReplicas(t *testing.T) {
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	p := testPool(t, func() time.Time { return now }, "http://127.0.0.1:19001", "http://127.0.0.1:19002")
	p.SetMaintenance([]entries.Entry{{Backend: "b", Reason: "disk", By: "ops"}}, entries.KeptByClock)
	o := Options{Pool: p, Started: now, MetricsPath: "/metrics",
		Store: func() maintenance.StoreStatus {
			return maintenance.StoreStatus{Kind: "etcd", Healthy: false, Stale: true, Error: "context deadline exceeded"}
		},
		Replicas: func() []maintenance.ReplicaView {
			return []maintenance.ReplicaView{{Name: "r0", Ready: true, BudgetHolds: true, Expected: 2, InService: 1, Updated: now.Add(-2 * time.Second)}}
		}}
	body := get(t, Handler(o), "/status").Body.String()
	for _, want := range []string{
		`data-field="store" data-healthy="false" data-stale="true"`, `etcd unreachable, stale`, `writes are refused`, `context deadline exceeded`,
		`<tr data-replica="r0" data-stale="false">`, `2s ago`,
		`data-field="maintenance-without-api"`, `in maintenance: b`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	o.AdminAPI, o.Store, o.Replicas = true, nil, nil
	body = get(t, Handler(o), "/status").Body.String()
	for _, unwanted := range []string{`data-field="store"`, `<h2>Replicas</h2>`, `maintenance-without-api`} {
		if strings.Contains(body, unwanted) {
			t.Errorf("page shows %s with no store, no replicas and the admin API on", unwanted)
		}
	}
}

// TestPageMarksAStaleReplica: a view whose lease this replica saw lapse
// is shown stale, with when it lapsed, never ready, whatever it said
// when it was live.
func TestPageMarksAStaleReplica(t *testing.T) {
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	p := testPool(t, func() time.Time { return now }, "http://127.0.0.1:19001")
	o := Options{Pool: p, Started: now, MetricsPath: "/metrics",
		Replicas: func() []maintenance.ReplicaView {
			return []maintenance.ReplicaView{
				{Name: "r0", Ready: true, BudgetHolds: true, Updated: now},
				{Name: "r1", Stale: true, BudgetHolds: true, Updated: now.Add(-70 * time.Second), Lapsed: now.Add(-60 * time.Second)},
			}
		}}
	body := get(t, Handler(o), "/status").Body.String()
	row := body[strings.Index(body, `<tr data-replica="r1"`):]
	row = row[:strings.Index(row, "</tr>")]
	for _, want := range []string{`data-stale="true"`, `>stale<`, `lapsed 1m0s ago`} {
		if !strings.Contains(row, want) {
			t.Errorf("r1's row %s lacks %s", row, want)
		}
	}
	if strings.Contains(row, ">ready<") {
		t.Errorf("r1's row %s says ready", row)
	}
}

// TestPageShowsTheProbePath: each backend's row says how its HTTP probe
// reaches it, its own connection or net/http and why.
func TestPageShowsTheProbePath(t *testing.T) {
	probe := testconfig.Probe()
	proxied := commoncfg.DefaultHTTPClientConfig
	proxied.BasicAuth = &commoncfg.BasicAuth{Username: "u", Password: "p"}
	p := pool.New(log.NewNopLogger(), nil)
	if err := p.Apply([]pool.Target{
		{Name: "a", URL: "http://127.0.0.1:19001", Probe: probe, ClientConfig: commoncfg.DefaultHTTPClientConfig},
		{Name: "b", URL: "http://127.0.0.1:19002", Probe: probe, ClientConfig: proxied},
	}, pool.Settings{}); err != nil {
		t.Fatal(err)
	}
	body := get(t, Handler(Options{Pool: p}), "/status").Body.String()
	for _, want := range []string{
		`<span data-field="probe-via">via own connection</span>`,
		`<span data-field="probe-via">via net/http (basic_auth)</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// TestPageShowsGroups: with replica groups the page has a table of them,
// those below their budget first, with their replicas in service and
// their budget, and each grouped backend's row names its group; a pool
// without groups has no such table.
func TestPageShowsGroups(t *testing.T) {
	p := testPool(t, nil, "http://127.0.0.1:19001", "http://127.0.0.1:19002", "http://127.0.0.1:19003", "http://127.0.0.1:19004")
	if body := get(t, Handler(Options{Pool: p}), "/status").Body.String(); strings.Contains(body, "Replica groups") || strings.Contains(body, `data-field="group"`) {
		t.Errorf("a pool without groups shows them:\n%s", body)
	}
	targets := make([]pool.Target, 4)
	for i, b := range p.Backends() {
		targets[i] = pool.Target{Name: b.Name, URL: b.URL, Probe: b.Probe, ClientConfig: commoncfg.DefaultHTTPClientConfig, Group: []string{"s1", "s1", "s2", "s2"}[i]}
	}
	if err := p.Apply(targets, pool.Settings{Readiness: config.Readiness{PerGroup: config.GroupBudget{MaxUnavailable: &config.IntOrPercent{Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		p.Backends()[2].RecordProbe(health.StatusResult(503))
		p.Backends()[3].RecordProbe(health.StatusResult(503))
	}
	body := get(t, Handler(Options{Pool: p}), "/status").Body.String()
	s2 := strings.Index(body, `<tr data-group="s2" data-in-service="0" data-replicas="2" data-budget-ok="false" class="out">`)
	s1 := strings.Index(body, `<tr data-group="s1" data-in-service="2" data-replicas="2" data-budget-ok="true" class="in">`)
	if s1 < 0 || s2 < 0 || s2 > s1 {
		t.Errorf("groups table lacks s2 below its budget before s1 holding:\n%s", body)
	}
	for _, want := range []string{`<span class="badge bad">below</span> 1 required`, `<span class="badge ok">holds</span> 1 required`,
		`<strong>a</strong><span class="muted group" data-field="group">group s1</span>`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
