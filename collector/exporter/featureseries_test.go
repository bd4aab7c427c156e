package exporter

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// maxSeriesPerBackend is the budget of series per backend with fan-out
// off (docs/design.md, "Budgets").
const maxSeriesPerBackend = 25

// leanBackendSeries are the series of one probed http backend, without a
// body regexp, when fan-out, passive health and maintenance are off, as
// /metrics shows them: probes, four failure reasons, refusals, four
// states, in service, reachable, verified, three transition targets,
// status code, timestamp, last transition, info, the last probe's
// duration, and the probe duration histogram's one bucket, +Inf, sum
// and count.
const leanBackendSeries = 1 + 4 + 1 + 4 + 3 + 3 + 1 + 1 + 1 + 1 + 1 + 1 + 3

// TestExporterExportsNothingOfFeaturesOff: with fan-out, passive health,
// maintenance and shared probing off, none of their series exist, not even
// at zero, and a backend costs at most the budget's series.
func TestExporterExportsNothingOfFeaturesOff(t *testing.T) {
	cfg := testConfig(namedBackends("a", "b")...)
	p := leanPool(t, cfg)
	for _, b := range p.Backends() {
		recordResult(b, 0, 200)
	}
	exporter := newExporter(p)
	text := allSeriesText(t, exporter)
	for _, absent := range []string{
		"probegate_fanout_backend_errors_total", "probegate_passive_ejections_total",
		`state="maintenance"`, `to="maintenance"`, `to="unknown"`,
		`reason="body_mismatch"`, `reason="grpc_not_serving"`, "probegate_group_", "probegate_vantage_",
	} {
		if strings.Contains(text, absent) {
			t.Errorf("%s exported with its feature off:\n%s", absent, text)
		}
	}
	// The budget of 25 is bench-metrics' to check; this pins the count.
	if perBackend := (exposedSeries(t, exporter) - leanPoolSeries) / 2; perBackend != leanBackendSeries {
		t.Errorf("%d series per backend, want %d", perBackend, leanBackendSeries)
	}
}

// exposedSeries counts the series c shows on /metrics: a classic
// histogram is its buckets, +Inf, sum and count.
func exposedSeries(t testing.TB, c prometheus.Collector) int {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return countExposed(families)
}

func countExposed(families []*dto.MetricFamily) int {
	n := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				n += len(h.GetBucket()) + 3
				continue
			}
			n++
		}
	}
	return n
}

// leanPoolSeries is the number of pool-wide series without
// maintenance: one per state but maintenance, and five others.
const leanPoolSeries = 4 + 5

// TestExporterExportsWhatFeaturesOnCanReach: each feature turned on brings
// its series back, each at zero before anything happened.
func TestExporterExportsWhatFeaturesOnCanReach(t *testing.T) {
	cases := []struct {
		name    string
		change  func(*config.Config)
		hook    bool
		present []string
	}{
		{"fan-out", func(c *config.Config) { c.Fanout.Enabled = true }, false,
			[]string{`probegate_fanout_backend_errors_total{backend="a",reason="timeout"} 0`}},
		{"passive health", func(c *config.Config) {
			c.PassiveHealth = config.Default().PassiveHealth
			c.PassiveHealth.Enabled = true
		}, false,
			[]string{`probegate_passive_ejections_total{backend="a"} 0`, `probegate_backend_transitions_total{backend="a",to="unknown"} 0`}},
		{"maintenance", func(*config.Config) {}, true,
			[]string{`probegate_backend_state{backend="a",state="maintenance"} 0`, `probegate_backend_transitions_total{backend="a",to="maintenance"} 0`,
				`probegate_backend_transitions_total{backend="a",to="unknown"} 0`, `probegate_backends{state="maintenance"} 0`}},
		{"body regexp", func(c *config.Config) { c.HealthProbe.ExpectBodyRegexp = "up" }, false,
			[]string{`probegate_probe_failures_total{backend="a",reason="body_mismatch"} 0`}},
		{"grpc", func(c *config.Config) { c.HealthProbe.Kind = config.KindGRPC }, false,
			[]string{`probegate_probe_failures_total{backend="a",reason="grpc_not_serving"} 0`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(namedBackends("a")...)
			tc.change(cfg)
			p := leanPool(t, cfg)
			if tc.hook {
				p.SetMaintenance(nil, entries.KeptByClock)
			}
			text := allSeriesText(t, newExporter(p))
			for _, line := range tc.present {
				if !strings.Contains(text, line) {
					t.Errorf("missing %s in\n%s", line, text)
				}
			}
		})
	}
}

// TestGroupSeries: with replica groups and the fan-out on, each group has
// its replicas and those in service, a backend without a group a group of
// its own: two series a group, none per round. With the fan-out off, a
// lean backend already has the budget's 25 series, and the groups have
// none.
func TestGroupSeries(t *testing.T) {
	cfg := testConfig(namedBackends("a", "b", "c", "d")...)
	cfg.Backends[0].Group, cfg.Backends[1].Group, cfg.Backends[3].Group = "s1", "s1", "s2"
	if text := allSeriesText(t, newExporter(leanPool(t, cfg))); strings.Contains(text, "probegate_group_") {
		t.Errorf("group series with the fan-out off:\n%s", text)
	}
	if leanBackendSeries < maxSeriesPerBackend {
		t.Errorf("a lean backend has %d series, less than the budget of %d: the groups' series could be exported with the fan-out off",
			leanBackendSeries, maxSeriesPerBackend)
	}
	cfg.Fanout.Enabled = true
	p := leanPool(t, cfg)
	for range cfg.HealthProbe.Failures {
		recordResult(p.Backends()[1], 0, 503)
	}
	exporter := newExporter(p)
	text := allSeriesText(t, exporter)
	for _, line := range []string{
		`probegate_group_in_service{group="s1"} 1`, `probegate_group_replicas{group="s1"} 2`,
		`probegate_group_in_service{group="c"} 1`, `probegate_group_replicas{group="c"} 1`,
		`probegate_group_in_service{group="s2"} 1`, `probegate_group_replicas{group="s2"} 1`,
	} {
		if !strings.Contains(text, line) {
			t.Errorf("missing %s in\n%s", line, text)
		}
	}
	if n := strings.Count(text, "\nprobegate_group_"); n != 2*3 {
		t.Errorf("%d group series, want 2 for each of the 3 groups", n)
	}
}

// TestFanoutMetricsOnlyWhileEnabled: the fan-out's own series exist while
// it is enabled, and a reload that turns it off removes them.
func TestFanoutMetricsOnlyWhileEnabled(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	f := fanout.New(pool.New(nil, nil), config.Fanout{Merge: "json_array"}, fanout.NewMetrics(reg), nil, nil)
	count := func() int {
		t.Helper()
		n, err := testutil.GatherAndCount(reg)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Errorf("%d fan-out series with fan-out off, want none", n)
	}
	f.Update(config.Fanout{Enabled: true, Merge: "json_array"})
	// requests, partial, partial in maintenance, partial by stragglers,
	// failed, rejected for two reasons, quorum failures and correlated
	// failures; the round histogram; no backend, so no backend histogram.
	if n := count(); n != 9+1 {
		t.Errorf("%d fan-out series with fan-out on, want 9 counters and a histogram", n)
	}
	f.Update(config.Fanout{Merge: "json_array"})
	if n := count(); n != 0 {
		t.Errorf("%d fan-out series after turning fan-out off, want none", n)
	}
}

// allSeriesText is every series of c in the text format.
func allSeriesText(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc := expfmt.NewEncoder(&out, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	if out.Len() == 0 {
		t.Fatal("no series at all")
	}
	return out.String()
}
