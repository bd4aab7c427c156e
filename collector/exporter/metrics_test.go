package exporter

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/health"
)

// histogramsOf gathers reg and returns the probe duration
// histogram of each class label value.
func histogramsOf(t *testing.T, reg prometheus.Gatherer) map[string]*dto.Histogram {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	byClass := map[string]*dto.Histogram{}
	for _, f := range families {
		if f.GetName() != "probegate_probe_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" {
					byClass[l.GetValue()] = m.GetHistogram()
				}
			}
		}
	}
	return byClass
}

// TestMetricsProbeDurationPerClass checks that every class exists empty
// from the start and that a probe's duration lands in its class only.
func TestMetricsProbeDurationPerClass(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)

	before := histogramsOf(t, reg)
	for _, c := range health.Classes() {
		h, ok := before[c.String()]
		if !ok {
			t.Fatalf("class %q has no series before any probe", c)
		}
		if h.GetSampleCount() != 0 {
			t.Errorf("class %q: %d samples before any probe", c, h.GetSampleCount())
		}
	}

	refused := health.StatusResult(404)
	refused.Duration = 30 * time.Millisecond
	m.ObserveProbe(refused)
	timeout := health.TimeoutResult("context deadline exceeded")
	timeout.Duration = 2 * time.Second
	m.ObserveProbe(timeout)
	m.ObserveProbe(timeout)

	after := histogramsOf(t, reg)
	for class, want := range map[string]struct {
		count uint64
		sum   float64
	}{
		"ok":      {0, 0},
		"refused": {1, 0.03},
		"failed":  {2, 4},
	} {
		h := after[class]
		if h.GetSampleCount() != want.count || h.GetSampleSum() != want.sum {
			t.Errorf("class %q: count %d sum %g, want count %d sum %g",
				class, h.GetSampleCount(), h.GetSampleSum(), want.count, want.sum)
		}
	}
	// 30ms falls in the 0.05 bucket, not the 0.025 one.
	for _, b := range after["refused"].GetBucket() {
		wantCount := uint64(0)
		if b.GetUpperBound() >= 0.03 {
			wantCount = 1
		}
		if b.GetCumulativeCount() != wantCount {
			t.Errorf("refused bucket le=%g: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), wantCount)
		}
	}
}

// TestMetricsFanoutAndReload checks the counter, gauge and histogram names
// of the reload metrics and of the fan-out's (registered alongside, as
// probegate serves them), and that ObserveReload keeps the last success
// time across a failure.
func TestMetricsFanoutAndReload(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	fm := fanout.NewMetrics(reg)
	fm.Requests.Add(3)
	fm.Partial.Inc()
	fm.Failed.Inc()
	fm.Duration.Observe(0.2)
	m.ObserveReload(true, time.Unix(1700000000, 500_000_000))
	m.ObserveReload(false, time.Unix(1700000100, 0))

	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP probegate_config_last_reload_success_timestamp_seconds Unix time of the last successful configuration load.
# TYPE probegate_config_last_reload_success_timestamp_seconds gauge
probegate_config_last_reload_success_timestamp_seconds 1.7000000005e+09
# HELP probegate_config_last_reload_successful Whether the last configuration reload attempt succeeded (1) or kept the running configuration (0).
# TYPE probegate_config_last_reload_successful gauge
probegate_config_last_reload_successful 0
# HELP probegate_fanout_failed_total Fan-out requests to which no backend contributed.
# TYPE probegate_fanout_failed_total counter
probegate_fanout_failed_total 1
# HELP probegate_fanout_partial_total Fan-out requests to which fewer backends contributed than are configured.
# TYPE probegate_fanout_partial_total counter
probegate_fanout_partial_total 1
# HELP probegate_fanout_requests_total Fan-out requests served.
# TYPE probegate_fanout_requests_total counter
probegate_fanout_requests_total 3
`), "probegate_config_last_reload_success_timestamp_seconds", "probegate_config_last_reload_successful",
		"probegate_fanout_failed_total", "probegate_fanout_partial_total", "probegate_fanout_requests_total")
	if err != nil {
		t.Error(err)
	}
	if got := testutil.CollectAndCount(fm.Duration, "probegate_fanout_duration_seconds"); got != 1 {
		t.Errorf("probegate_fanout_duration_seconds: %d series, want 1", got)
	}

	m.ObserveReload(true, time.Unix(1700000200, 0))
	if got := testutil.ToFloat64(m.ConfigReloadSuccess); got != 1 {
		t.Errorf("reload successful after a good reload = %g, want 1", got)
	}
	if got := testutil.ToFloat64(m.ConfigReloadTimestamp); got != 1700000200 {
		t.Errorf("reload timestamp = %g, want 1700000200", got)
	}
}

// TestMetricsRegistriesAreIndependent checks there is no package-level
// state: two instances on two registries count apart.
func TestMetricsRegistriesAreIndependent(t *testing.T) {
	regOne, regTwo := prometheus.NewRegistry(), prometheus.NewRegistry()
	one, two := NewMetrics(regOne), NewMetrics(regTwo)
	one.ObserveReload(true, time.Unix(1700000000, 0))
	one.ObserveProbe(health.StatusResult(200))
	if got := testutil.ToFloat64(two.ConfigReloadTimestamp); got != 0 {
		t.Errorf("second instance has the reload timestamp %g of the first", got)
	}
	if got := histogramsOf(t, regTwo)["ok"].GetSampleCount(); got != 0 {
		t.Errorf("second instance counted %d ok probes of the first", got)
	}
	if got := histogramsOf(t, regOne)["ok"].GetSampleCount(); got != 1 {
		t.Errorf("first instance counted %d ok probes, want 1", got)
	}
	if got := testutil.CollectAndCount(two.ProbeDuration); got != len(health.Classes()) {
		t.Errorf("second instance has %d probe duration series, want %d", got, len(health.Classes()))
	}
	fOne, fTwo := fanout.NewMetrics(regOne), fanout.NewMetrics(regTwo)
	fOne.Requests.Inc()
	if got := testutil.ToFloat64(fTwo.Requests); got != 0 {
		t.Errorf("second instance counted %g fan-out requests of the first", got)
	}
}

// TestMetricsNilObservesNothing checks that components may run without
// instrumentation.
func TestMetricsNilObservesNothing(t *testing.T) {
	var m *Metrics
	m.ObserveProbe(health.StatusResult(200))
	m.ObserveReload(true, time.Now())
}

// TestMetricsLint runs promlint over the instrumentation, the fan-out's
// included.
func TestMetricsLint(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	NewMetrics(reg)
	fanout.NewMetrics(reg)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("lint %s: %s", p.Metric, p.Text)
	}
}
