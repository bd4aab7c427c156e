package exporter

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

// sampleEpoch is the start time of the probes the exporter tests feed.
var sampleEpoch = time.Unix(1700000000, 0)

// sampleConfig is a configuration with thresholds 3/2 and one
// loopback backend per name (nothing listens: the tests feed results),
// with fan-out and passive health on, so that every series is exported.
func sampleConfig(names ...string) *config.Config {
	cfg := testConfig(namedBackends(names...)...)
	cfg.Fanout.Enabled = true
	cfg.PassiveHealth = config.Default().PassiveHealth
	cfg.PassiveHealth.Enabled = true
	return cfg
}

// samplePool is a pool of cfg's backends with maintenance in use
// (a store gave it its entries, none).
func samplePool(t testing.TB, cfg *config.Config) *pool.Pool {
	t.Helper()
	p := leanPool(t, cfg)
	p.SetMaintenance(nil, entries.KeptByClock)
	return p
}

// leanPool is a pool of cfg's backends without maintenance.
func leanPool(t testing.TB, cfg *config.Config) *pool.Pool {
	t.Helper()
	p := pool.New(log.NewNopLogger(), nil)
	if err := p.Apply(discovery.Static(cfg), pool.SettingsOf(cfg)); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return p
}

// recordResult feeds status results to a backend, one second apart
// starting at offset after sampleEpoch.
func recordResult(b *pool.Backend, offset time.Duration, codes ...int) {
	for i, code := range codes {
		r := health.StatusResult(code)
		r.Time = sampleEpoch.Add(offset + time.Duration(i)*time.Second)
		r.Duration = 10 * time.Millisecond
		b.RecordProbe(r)
	}
}

// exportedText renders the collector's series in the text format
// without HELP lines (the lint test checks those), so the expectations
// read as the exposition an operator sees.
func exportedText(t *testing.T, c prometheus.Collector, names ...string) string {
	t.Helper()
	out, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, names...)
	if err != nil {
		t.Fatalf("collect: %v", err)
	}
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(line, "# HELP ") {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}

func compareExposition(t *testing.T, got, want string) {
	t.Helper()
	want = strings.TrimSpace(want)
	if got != want {
		t.Errorf("series differ\n--- got\n%s\n--- want\n%s", got, want)
	}
}

// TestExporterSeriesOfPoolInEveryState drives four backends into the four
// states and checks every backend and pool series, exactly.
func TestExporterSeriesOfPoolInEveryState(t *testing.T) {
	cfg := sampleConfig("a", "b", "c", "d")
	cfg.Backends[2].HealthProbe = config.NewHealthProbeOverride(config.HealthProbe{Path: "/status"}, "path")
	p := samplePool(t, cfg)
	bs := p.Backends()
	recordResult(bs[0], 0, 200)                    // healthy
	recordResult(bs[1], 0, 200, 503, 503, 503)     // unhealthy, verified
	recordResult(bs[2], 250*time.Millisecond, 404) // probe_unsupported
	/* bs[3] is never probed */ // unknown

	got := exportedText(t, newExporter(p),
		"probegate_backend_in_service",
		"probegate_backend_info",
		"probegate_backend_last_probe_status_code",
		"probegate_backend_last_probe_timestamp_seconds",
		"probegate_backend_probe_verified",
		"probegate_backend_reachable",
		"probegate_backend_state",
		"probegate_backend_transitions_total",
		"probegate_backends",
		"probegate_backends_configured",
		"probegate_backends_in_service",
		"probegate_pool_fail_open",
		"probegate_probe_failures_total",
		"probegate_probe_refusals_total",
		"probegate_probes_total",
		"probegate_readiness_desired_healthy",
		"probegate_readiness_disruptions_allowed",
	)
	compareExposition(t, got, `
# TYPE probegate_backend_in_service gauge
probegate_backend_in_service{backend="a"} 1
probegate_backend_in_service{backend="b"} 0
probegate_backend_in_service{backend="c"} 1
probegate_backend_in_service{backend="d"} 1
# TYPE probegate_backend_info gauge
probegate_backend_info{backend="a",probe_path="/healthz",url="http://127.0.0.1:19001"} 1
probegate_backend_info{backend="b",probe_path="/healthz",url="http://127.0.0.1:19002"} 1
probegate_backend_info{backend="c",probe_path="/status",url="http://127.0.0.1:19003"} 1
probegate_backend_info{backend="d",probe_path="/healthz",url="http://127.0.0.1:19004"} 1
# TYPE probegate_backend_last_probe_status_code gauge
probegate_backend_last_probe_status_code{backend="a"} 200
probegate_backend_last_probe_status_code{backend="b"} 503
probegate_backend_last_probe_status_code{backend="c"} 404
probegate_backend_last_probe_status_code{backend="d"} 0
# TYPE probegate_backend_last_probe_timestamp_seconds gauge
probegate_backend_last_probe_timestamp_seconds{backend="a"} 1.7e+09
probegate_backend_last_probe_timestamp_seconds{backend="b"} 1.700000003e+09
probegate_backend_last_probe_timestamp_seconds{backend="c"} 1.70000000025e+09
# TYPE probegate_backend_probe_verified gauge
probegate_backend_probe_verified{backend="a"} 1
probegate_backend_probe_verified{backend="b"} 1
probegate_backend_probe_verified{backend="c"} 0
probegate_backend_probe_verified{backend="d"} 0
# TYPE probegate_backend_reachable gauge
probegate_backend_reachable{backend="a"} 1
probegate_backend_reachable{backend="b"} 1
probegate_backend_reachable{backend="c"} 1
probegate_backend_reachable{backend="d"} 1
# TYPE probegate_backend_state gauge
probegate_backend_state{backend="a",state="healthy"} 1
probegate_backend_state{backend="a",state="maintenance"} 0
probegate_backend_state{backend="a",state="probe_unsupported"} 0
probegate_backend_state{backend="a",state="unhealthy"} 0
probegate_backend_state{backend="a",state="unknown"} 0
probegate_backend_state{backend="b",state="healthy"} 0
probegate_backend_state{backend="b",state="maintenance"} 0
probegate_backend_state{backend="b",state="probe_unsupported"} 0
probegate_backend_state{backend="b",state="unhealthy"} 1
probegate_backend_state{backend="b",state="unknown"} 0
probegate_backend_state{backend="c",state="healthy"} 0
probegate_backend_state{backend="c",state="maintenance"} 0
probegate_backend_state{backend="c",state="probe_unsupported"} 1
probegate_backend_state{backend="c",state="unhealthy"} 0
probegate_backend_state{backend="c",state="unknown"} 0
probegate_backend_state{backend="d",state="healthy"} 0
probegate_backend_state{backend="d",state="maintenance"} 0
probegate_backend_state{backend="d",state="probe_unsupported"} 0
probegate_backend_state{backend="d",state="unhealthy"} 0
probegate_backend_state{backend="d",state="unknown"} 1
# TYPE probegate_backend_transitions_total counter
probegate_backend_transitions_total{backend="a",to="healthy"} 1
probegate_backend_transitions_total{backend="a",to="maintenance"} 0
probegate_backend_transitions_total{backend="a",to="probe_unsupported"} 0
probegate_backend_transitions_total{backend="a",to="unhealthy"} 0
probegate_backend_transitions_total{backend="a",to="unknown"} 0
probegate_backend_transitions_total{backend="b",to="healthy"} 1
probegate_backend_transitions_total{backend="b",to="maintenance"} 0
probegate_backend_transitions_total{backend="b",to="probe_unsupported"} 0
probegate_backend_transitions_total{backend="b",to="unhealthy"} 1
probegate_backend_transitions_total{backend="b",to="unknown"} 0
probegate_backend_transitions_total{backend="c",to="healthy"} 0
probegate_backend_transitions_total{backend="c",to="maintenance"} 0
probegate_backend_transitions_total{backend="c",to="probe_unsupported"} 1
probegate_backend_transitions_total{backend="c",to="unhealthy"} 0
probegate_backend_transitions_total{backend="c",to="unknown"} 0
probegate_backend_transitions_total{backend="d",to="healthy"} 0
probegate_backend_transitions_total{backend="d",to="maintenance"} 0
probegate_backend_transitions_total{backend="d",to="probe_unsupported"} 0
probegate_backend_transitions_total{backend="d",to="unhealthy"} 0
probegate_backend_transitions_total{backend="d",to="unknown"} 0
# TYPE probegate_backends gauge
probegate_backends{state="healthy"} 1
probegate_backends{state="maintenance"} 0
probegate_backends{state="probe_unsupported"} 1
probegate_backends{state="unhealthy"} 1
probegate_backends{state="unknown"} 1
# TYPE probegate_backends_configured gauge
probegate_backends_configured 4
# TYPE probegate_backends_in_service gauge
probegate_backends_in_service 3
# TYPE probegate_pool_fail_open gauge
probegate_pool_fail_open 0
# TYPE probegate_probe_failures_total counter
probegate_probe_failures_total{backend="a",reason="http_429"} 0
probegate_probe_failures_total{backend="a",reason="http_5xx"} 0
probegate_probe_failures_total{backend="a",reason="timeout"} 0
probegate_probe_failures_total{backend="a",reason="transport"} 0
probegate_probe_failures_total{backend="b",reason="http_429"} 0
probegate_probe_failures_total{backend="b",reason="http_5xx"} 3
probegate_probe_failures_total{backend="b",reason="timeout"} 0
probegate_probe_failures_total{backend="b",reason="transport"} 0
probegate_probe_failures_total{backend="c",reason="http_429"} 0
probegate_probe_failures_total{backend="c",reason="http_5xx"} 0
probegate_probe_failures_total{backend="c",reason="timeout"} 0
probegate_probe_failures_total{backend="c",reason="transport"} 0
probegate_probe_failures_total{backend="d",reason="http_429"} 0
probegate_probe_failures_total{backend="d",reason="http_5xx"} 0
probegate_probe_failures_total{backend="d",reason="timeout"} 0
probegate_probe_failures_total{backend="d",reason="transport"} 0
# TYPE probegate_probe_refusals_total counter
probegate_probe_refusals_total{backend="a"} 0
probegate_probe_refusals_total{backend="b"} 0
probegate_probe_refusals_total{backend="c"} 1
probegate_probe_refusals_total{backend="d"} 0
# TYPE probegate_probes_total counter
probegate_probes_total{backend="a"} 1
probegate_probes_total{backend="b"} 4
probegate_probes_total{backend="c"} 1
probegate_probes_total{backend="d"} 0
# TYPE probegate_readiness_desired_healthy gauge
probegate_readiness_desired_healthy 1
# TYPE probegate_readiness_disruptions_allowed gauge
probegate_readiness_disruptions_allowed 2
`)
}

// TestExporterUnreachableBackend checks a backend dead from the start:
// out of service, unreachable, its unanswered failures counted by reason
// and a last status code of 0.
func TestExporterUnreachableBackend(t *testing.T) {
	p := samplePool(t, sampleConfig("dead"))
	b := p.Backends()[0]
	b.RecordProbe(health.TransportResult("connect: connection refused"))
	b.RecordProbe(health.TimeoutResult("context deadline exceeded"))
	b.RecordProbe(health.TransportResult("connect: connection refused"))

	got := exportedText(t, newExporter(p),
		"probegate_backend_reachable",
		"probegate_backend_in_service",
		"probegate_backend_last_probe_status_code",
		"probegate_probe_failures_total",
		"probegate_pool_fail_open",
		"probegate_readiness_disruptions_allowed",
	)
	compareExposition(t, got, `
# TYPE probegate_backend_in_service gauge
probegate_backend_in_service{backend="dead"} 0
# TYPE probegate_backend_last_probe_status_code gauge
probegate_backend_last_probe_status_code{backend="dead"} 0
# TYPE probegate_backend_reachable gauge
probegate_backend_reachable{backend="dead"} 0
# TYPE probegate_pool_fail_open gauge
probegate_pool_fail_open 1
# TYPE probegate_probe_failures_total counter
probegate_probe_failures_total{backend="dead",reason="http_429"} 0
probegate_probe_failures_total{backend="dead",reason="http_5xx"} 0
probegate_probe_failures_total{backend="dead",reason="timeout"} 1
probegate_probe_failures_total{backend="dead",reason="transport"} 2
# TYPE probegate_readiness_disruptions_allowed gauge
probegate_readiness_disruptions_allowed 0
`)
}

// TestExporterPreinitialisesLabelValues checks that every failure reason,
// state, transition target and fan-out error reason has its series at 0
// before anything happened, so rate() and alerts work from the start,
// and that the timestamp series is absent until the first probe.
func TestExporterPreinitialisesLabelValues(t *testing.T) {
	p := samplePool(t, sampleConfig("fresh"))
	exporter := newExporter(p)

	for name, want := range map[string]int{
		"probegate_probe_failures_total":                 len(health.FailureReasons()) - 3, // an http probe without a body regexp, nothing local yet
		"probegate_backend_state":                        exportedStates(),
		"probegate_backend_transitions_total":            exportedStates(),
		"probegate_fanout_backend_errors_total":          len(fanoutErrorReasons()),
		"probegate_backends":                             exportedStates(),
		"probegate_passive_ejections_total":              1,
		"probegate_backend_last_probe_status_code":       1,
		"probegate_backend_last_probe_timestamp_seconds": 0,
	} {
		if got := testutil.CollectAndCount(exporter, name); got != want {
			t.Errorf("%s: %d series before any probe, want %d", name, got, want)
		}
	}

	got := exportedText(t, exporter, "probegate_probe_failures_total")
	compareExposition(t, got, `
# TYPE probegate_probe_failures_total counter
probegate_probe_failures_total{backend="fresh",reason="http_429"} 0
probegate_probe_failures_total{backend="fresh",reason="http_5xx"} 0
probegate_probe_failures_total{backend="fresh",reason="timeout"} 0
probegate_probe_failures_total{backend="fresh",reason="transport"} 0
`)
	// The fan-out owns its list of reasons; each must be there at 0.
	got = exportedText(t, exporter, "probegate_fanout_backend_errors_total")
	if strings.Contains(got, `reason="straggler"`) {
		t.Errorf("a straggler cut is among the error reasons; the fan-out counts it apart:\n%s", got)
	}
	for _, r := range fanoutErrorReasons() {
		line := fmt.Sprintf("probegate_fanout_backend_errors_total{backend=\"fresh\",reason=%q} 0\n", r)
		if !strings.Contains(got+"\n", line) {
			t.Errorf("missing %s in\n%s", line, got)
		}
	}
}

// snapshotCollector exports a hand-made pool snapshot, for
// numbers the tests cannot drive through a Backend (traffic is recorded by
// the fan-out).
type snapshotCollector struct {
	*exporter
	snapshot pool.Snapshot
}

func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	c.collect(ch, c.snapshot)
}

// TestExporterTrafficSeries checks that each fan-out error count lands on
// its own reason label and that passive ejections are exported.
func TestExporterTrafficSeries(t *testing.T) {
	snap := pool.BackendSnapshot{Name: "x", URL: "http://127.0.0.1:19001", ProbePath: "/healthz"}
	snap.Traffic.Ejections = 2
	for i, r := range traffic.Reasons() {
		snap.Traffic.Errors[r] = uint64(10 + i)
	}
	c := snapshotCollector{
		exporter: newExporter(samplePool(t, sampleConfig())),
		snapshot: pool.Snapshot{Backends: []pool.BackendSnapshot{snap}, Fanout: true, PassiveHealth: true},
	}
	got := exportedText(t, c, "probegate_passive_ejections_total")
	compareExposition(t, got, `
# TYPE probegate_passive_ejections_total counter
probegate_passive_ejections_total{backend="x"} 2
`)
	// The fan-out owns its list of reasons: check each count went to
	// its own label, whatever the list is.
	got = exportedText(t, c, "probegate_fanout_backend_errors_total")
	for _, r := range fanoutErrorReasons() {
		line := fmt.Sprintf("probegate_fanout_backend_errors_total{backend=\"x\",reason=%q} %d\n", r, 10+int(r))
		if !strings.Contains(got+"\n", line) {
			t.Errorf("missing %s in\n%s", line, got)
		}
	}
}

// TestExporterStateSetIsOneHot walks one backend through every state and
// checks after each step that exactly its current state reads 1.
func TestExporterStateSetIsOneHot(t *testing.T) {
	p := samplePool(t, sampleConfig("walker"))
	b := p.Backends()[0]
	exporter := newExporter(p)
	steps := []struct {
		feed []int
		want health.ServedState
	}{
		{nil, health.ServedUnknown},
		{[]int{404}, health.ServedProbeUnsupported},
		{[]int{200}, health.ServedHealthy},
		{[]int{503, 503, 503}, health.ServedUnhealthy},
		{[]int{200, 200}, health.ServedHealthy},
	}
	for _, step := range steps {
		recordResult(b, 0, step.feed...)
		var lines []string
		for _, s := range health.ServedStates() {
			if s == health.ServedEjected {
				continue // Outlier detection is off.
			}
			value := 0
			if s == step.want {
				value = 1
			}
			lines = append(lines, fmt.Sprintf("probegate_backend_state{backend=\"walker\",state=%q} %d", s, value))
		}
		got := exportedText(t, exporter, "probegate_backend_state")
		// The exposition sorts by label value; compare as sets.
		for _, line := range lines {
			if !strings.Contains(got+"\n", line+"\n") {
				t.Errorf("after %v: missing %s in\n%s", step.feed, line, got)
			}
		}
	}
}

// TestExporterForgetsRemovedBackend checks that a backend dropped by reload
// vanishes from the next scrape while the others keep their numbers.
func TestExporterForgetsRemovedBackend(t *testing.T) {
	cfg := sampleConfig("keep", "drop")
	p := samplePool(t, cfg)
	recordResult(p.Backends()[0], 0, 200)
	recordResult(p.Backends()[1], 0, 200, 503) // a state change, like keep's
	exporter := newExporter(p)
	perBackend := testutil.CollectAndCount(exporter) - poolSeries
	if perBackend%2 != 0 {
		t.Fatalf("%d backend series for two backends", perBackend)
	}

	reloaded := sampleConfig("keep")
	if err := p.Apply(discovery.Static(reloaded), pool.SettingsOf(reloaded)); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got, want := testutil.CollectAndCount(exporter), perBackend/2+poolSeries; got != want {
		t.Errorf("%d series after removing a backend, want %d", got, want)
	}
	got := exportedText(t, exporter, "probegate_probes_total", "probegate_backends_configured")
	compareExposition(t, got, `
# TYPE probegate_backends_configured gauge
probegate_backends_configured 1
# TYPE probegate_probes_total counter
probegate_probes_total{backend="keep"} 1
`)
}

// poolSeries is the number of pool-wide series: one per state
// plus configured, in service, fail-open, desired healthy, disruptions
// allowed and, passive health being on, its suppressed ejections.
const poolSeries = 5 + 5 + 1

// exportedStates is the number of states exported with outlier
// detection off: all but ejected.
func exportedStates() int { return len(health.ServedStates()) - 1 }

// seriesPerBackend is the number of series per backend once
// probed: probes, one per failure reason, refusals, one per state, in
// service, reachable, verified, one transition count per state, status
// code, timestamp, info, one per fan-out error reason (a straggler cut
// is the fan-out's to count), ejections, the last
// transition's timestamp (a probed backend left unknown), the probe
// duration histogram (one metric, however many buckets) and the last
// probe's duration. An http probe without a body regexp cannot fail for
// body_mismatch or grpc_not_serving, and local failures show from the
// first.
func seriesPerBackend() int {
	states := exportedStates()
	return 1 + len(health.FailureReasons()) - 3 + 1 + states + 3 + states + 2 + 1 + len(traffic.Reasons()) - 1 + 1 + 1 + 2
}

// TestExporterSeriesCount pins the number of series per backend, which the
// /metrics budget (docs/design.md, "Budgets") is expressed in.
func TestExporterSeriesCount(t *testing.T) {
	p := samplePool(t, sampleConfig("a", "b", "c"))
	for _, b := range p.Backends() {
		recordResult(b, 0, 200)
	}
	if got, want := testutil.CollectAndCount(newExporter(p)), 3*seriesPerBackend()+poolSeries; got != want {
		t.Errorf("%d series for 3 probed backends, want %d", got, want)
	}
}

// TestExporterLint runs promlint over every series of a probed pool: names,
// units, help text and counter suffixes follow the conventions.
func TestExporterLint(t *testing.T) {
	p := samplePool(t, sampleConfig("a", "b"))
	recordResult(p.Backends()[0], 0, 200)
	recordResult(p.Backends()[1], 0, 404)
	problems, err := testutil.CollectAndLint(newExporter(p))
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint %s: %s", p.Metric, p.Text)
	}
}

// TestExporterEmptyPool checks a pool without backends exports the pool
// series (zero configured, zero in service) and nothing else.
func TestExporterEmptyPool(t *testing.T) {
	p := samplePool(t, sampleConfig())
	exporter := newExporter(p)
	if got := testutil.CollectAndCount(exporter); got != poolSeries {
		t.Errorf("%d series for an empty pool, want %d", got, poolSeries)
	}
	got := exportedText(t, exporter, "probegate_backends_configured", "probegate_pool_fail_open", "probegate_readiness_desired_healthy")
	compareExposition(t, got, `
# TYPE probegate_backends_configured gauge
probegate_backends_configured 0
# TYPE probegate_pool_fail_open gauge
probegate_pool_fail_open 0
# TYPE probegate_readiness_desired_healthy gauge
probegate_readiness_desired_healthy 1
`)
}

// mixedPool is a pool with a backend in each state, probed at
// known times.
func mixedPool(t testing.TB) *pool.Pool {
	t.Helper()
	p := samplePool(t, sampleConfig("d", "c", "b", "a"))
	bs := p.Backends()
	recordResult(bs[0], 0, 200)
	recordResult(bs[1], 0, 200, 503, 503, 503)
	recordResult(bs[2], 0, 404)
	return p
}

func gatheredText(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var out strings.Builder
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&out, f); err != nil {
			t.Fatalf("encode %s: %v", f.GetName(), err)
		}
	}
	return out.String()
}

// TestGathererMatchesRegisteredExporter checks that the fast /metrics
// path exports exactly what a registry with the exporter registered does,
// merged in name order with the registry's own metrics.
func TestGathererMatchesRegisteredExporter(t *testing.T) {
	p := mixedPool(t)

	viaRegistry := prometheus.NewPedanticRegistry()
	NewMetrics(viaRegistry)
	fanout.NewMetrics(viaRegistry).Requests.Inc()
	viaRegistry.MustRegister(newExporter(p))

	others := prometheus.NewPedanticRegistry()
	NewMetrics(others)
	fanout.NewMetrics(others).Requests.Inc()
	direct := NewGatherer(p, others)

	want := gatheredText(t, viaRegistry)
	if got := gatheredText(t, direct); got != want {
		t.Errorf("gatherer and registry differ\n--- gatherer\n%s\n--- registry\n%s", got, want)
	}
	if !strings.Contains(want, "probegate_fanout_requests_total 1") || !strings.Contains(want, `probegate_probes_total{backend="c"} 4`) {
		t.Errorf("comparison lacks the metrics it is about:\n%s", want)
	}
}

// TestGathererReportsCollision checks that a family exported by both the
// pool and the registry is an error, keeping the pool's series.
func TestGathererReportsCollision(t *testing.T) {
	p := mixedPool(t)
	others := prometheus.NewRegistry()
	impostor := prometheus.NewGauge(prometheus.GaugeOpts{Name: "probegate_backends_configured", Help: "Backends in the configuration."})
	impostor.Set(99)
	others.MustRegister(impostor)

	families, err := NewGatherer(p, others).Gather()
	if err == nil || !strings.Contains(err.Error(), "probegate_backends_configured") {
		t.Errorf("error %v, want one naming probegate_backends_configured", err)
	}
	for _, f := range families {
		if f.GetName() == "probegate_backends_configured" {
			if v := f.GetMetric()[0].GetGauge().GetValue(); v != 4 {
				t.Errorf("kept probegate_backends_configured %g, want the pool's 4", v)
			}
		}
	}
}

// TestGathererServesValidExposition serves the gatherer through promhttp
// and parses the answer back, with a label value that is not UTF-8.
func TestGathererServesValidExposition(t *testing.T) {
	cfg := sampleConfig("a")
	cfg.Backends[0].URL = "http://127.0.0.1:19001/\xff"
	p := samplePool(t, cfg)
	handler := promhttp.HandlerFor(NewGatherer(p, prometheus.NewRegistry()), promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	info := families["probegate_backend_info"]
	if info == nil || len(info.GetMetric()) != 1 {
		t.Fatalf("probegate_backend_info missing: %v", info)
	}
	for _, l := range info.GetMetric()[0].GetLabel() {
		if l.GetName() == "url" && l.GetValue() != "http://127.0.0.1:19001/\uFFFD" {
			t.Errorf("url label %q, want the invalid byte replaced", l.GetValue())
		}
	}
	// Outlier detection is off: its three families export nothing, no
	// backend has a group: neither do the groups' two, and shared probing
	// is off: nor do the vantage points' two.
	if got, want := len(families), int(numFamilies)-4-3-2-2; got != want {
		t.Errorf("%d families before any probe, want %d (all but the last probe's timestamp and duration, the last transition's timestamp, the certificate expiry, outlier detection's, the groups' and the vantage points')", got, want)
	}
}

// TestExporterProbeDurations checks the per-backend latency series: the
// histogram's classic buckets, sum and count and the last probe's
// duration for a probed backend, and no latency series at all for one
// that is not probed.
func TestExporterProbeDurations(t *testing.T) {
	cfg := sampleConfig("probed", "unprobed")
	cfg.Backends[1].HealthProbe = config.NewHealthProbeOverride(config.HealthProbe{Enabled: false}, "enabled")
	p := samplePool(t, cfg)
	probed := p.Backends()[0]
	for i, d := range []time.Duration{2 * time.Millisecond, 20 * time.Millisecond, 300 * time.Millisecond, 3 * time.Second} {
		r := health.StatusResult(200)
		r.Time, r.Duration = sampleEpoch.Add(time.Duration(i)*time.Second), d
		probed.RecordProbe(r)
	}
	got := exportedText(t, newExporter(p), "probegate_backend_probe_duration_seconds", "probegate_backend_last_probe_duration_seconds")
	compareExposition(t, got, `
# TYPE probegate_backend_last_probe_duration_seconds gauge
probegate_backend_last_probe_duration_seconds{backend="probed"} 3
# TYPE probegate_backend_probe_duration_seconds histogram
probegate_backend_probe_duration_seconds_bucket{backend="probed",le="0.1"} 2
probegate_backend_probe_duration_seconds_bucket{backend="probed",le="+Inf"} 4
probegate_backend_probe_duration_seconds_sum{backend="probed"} 3.322
probegate_backend_probe_duration_seconds_count{backend="probed"} 4
`)

	// The native buckets reach a scrape that asks for protobuf.
	families, err := NewGatherer(p, nil).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "probegate_backend_probe_duration_seconds" {
			continue
		}
		if len(f.GetMetric()) != 1 {
			t.Fatalf("%d histograms, want the probed backend's only", len(f.GetMetric()))
		}
		h := f.GetMetric()[0].GetHistogram()
		if h.GetSchema() != 3 || len(h.GetPositiveSpan()) == 0 || h.GetSampleCount() != 4 {
			t.Errorf("native histogram schema %d, %d spans, count %d; want schema 3 (factor 1.1), spans, 4 samples", h.GetSchema(), len(h.GetPositiveSpan()), h.GetSampleCount())
		}
		return
	}
	t.Error("the gatherer exports no probegate_backend_probe_duration_seconds")
}

// TestExporterCertExpiry checks the certificate expiry of a backend
// probed over TLS: the last TLS probe's, kept through a probe that failed
// before any handshake; a backend never probed over TLS has no series.
func TestExporterCertExpiry(t *testing.T) {
	p := samplePool(t, sampleConfig("tls", "plain"))
	bs := p.Backends()
	for _, expiry := range []time.Time{sampleEpoch.Add(30 * 24 * time.Hour), sampleEpoch.Add(10 * 24 * time.Hour)} {
		r := health.StatusResult(200)
		r.TLSCertExpiry = expiry
		bs[0].RecordProbe(r)
	}
	bs[0].RecordProbe(health.TransportResult("connect: connection refused"))
	recordResult(bs[1], 0, 200)
	got := exportedText(t, newExporter(p), "probegate_backend_tls_cert_expiry_timestamp_seconds")
	compareExposition(t, got, `
# TYPE probegate_backend_tls_cert_expiry_timestamp_seconds gauge
probegate_backend_tls_cert_expiry_timestamp_seconds{backend="tls"} 1.700864e+09
`)
}
