package exporter

import (
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/traffic"
	"github.com/probegate/probegate/config"
)

// TestOutlierSeriesOnlyWhenOn: with outlier detection off there is no
// state="ejected" series and no outlier family; on, each backend has
// them, with the ejections of the mode in force pre-initialised, and an
// ejected backend shows in the state set.
func TestOutlierSeriesOnlyWhenOn(t *testing.T) {
	cfg := sampleConfig("a", "b")
	off := exportedText(t, newExporter(samplePool(t, cfg)))
	for _, name := range []string{`state="ejected"`, `to="ejected"`, "outlier"} {
		if strings.Contains(off, name) {
			t.Errorf("outlier detection off, yet %s is exported:\n%s", name, off)
		}
	}

	cfg.Fanout.Enabled = true
	cfg.Fanout.OutlierDetection = config.DefaultOutlierDetection()
	cfg.Fanout.OutlierDetection.Enabled = true
	cfg.Fanout.OutlierDetection.MinRounds = 3
	p := samplePool(t, cfg)
	a, b := p.Backends()[0], p.Backends()[1]
	// b's first probe gave its verdict: the floor of an ejection counts
	// only the backends with one.
	b.RecordProbe(health.StatusResult(200))
	for range 3 {
		p.RecordRound([]pool.RoundSample{
			{Backend: a, Outcome: traffic.Outcome{Erred: true, Failed: true, Reason: traffic.HTTP5xx}, Latency: time.Millisecond},
			{Backend: b, Latency: time.Millisecond},
		})
	}
	got := exportedText(t, newExporter(p), "probegate_outlier_ejections_total", "probegate_backend_outlier_ejected",
		"probegate_outlier_ejections_suppressed_total", "probegate_backend_state")
	for _, want := range []string{
		`probegate_outlier_ejections_total{backend="a",enforced="true",reason="failure"} 1`,
		`probegate_outlier_ejections_total{backend="a",enforced="true",reason="latency"} 0`,
		`probegate_outlier_ejections_total{backend="b",enforced="true",reason="failure"} 0`,
		`probegate_backend_outlier_ejected{backend="a"} 1`,
		`probegate_backend_outlier_ejected{backend="b"} 0`,
		`probegate_outlier_ejections_suppressed_total{reason="failure"} 0`,
		`probegate_backend_state{backend="a",state="ejected"} 1`,
		`probegate_backend_state{backend="b",state="ejected"} 0`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("missing %s in:\n%s", want, got)
		}
	}
	if strings.Contains(got, `enforced="false"`) {
		t.Errorf("a dry run's series exported while enforcing:\n%s", got)
	}
}
