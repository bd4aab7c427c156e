package lint

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseReportsSelectorsRangesAndAggregations(t *testing.T) {
	expr := `sum without (reason) (rate(probegate_probe_failures_total{job="probegate", reason!~"http_.*"}[5m]))
	  / on (job) group_left ()
	  sum by (job) (rate(probegate_probes_total[$__rate_interval] offset 1h))
	  > bool 0.5 and histogram_quantile(0.99, max(x_bucket) by (le))`
	got, err := Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	want := Expr{
		Selectors: []Selector{
			{Metric: "probegate_probe_failures_total", Matchers: []Matcher{{"job", "=", `"probegate"`}, {"reason", "!~", `"http_.*"`}}},
			{Metric: "probegate_probes_total"},
			{Metric: "x_bucket"},
		},
		Ranges:       []string{"5m", "$__rate_interval"},
		Aggregations: []Aggregation{{"sum", true}, {"sum", true}, {"max", true}},
		Functions:    []string{"rate", "rate", "histogram_quantile"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
	if !got.Selectors[0].Has("job", "=", `"probegate"`) || got.Selectors[1].Has("job", "=", `"probegate"`) {
		t.Error("Selector.Has disagrees with the matchers")
	}
}

func TestParseAcceptsPromQLShapes(t *testing.T) {
	for _, expr := range []string{
		`up`,
		`-up`,
		`{__name__="up"}`,
		`instance:probegate_fanout_partial:rate5m{job="probegate"}`,
		`count(probegate_gate_ready == 0) or vector(0)`,
		`time() - probegate_backend_last_probe_timestamp_seconds`,
		`max_over_time(up[1h:5m])`,
		`topk(3, up)`,
		`label_replace(up, "a", "$1", "instance", "(.*):.*")`,
		"sum(up) # a comment\n",
		`1e3 * 2.5 + .5`,
		"up{job=`raw`}",
	} {
		if _, err := Parse(expr); err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
		}
	}
}

func TestParseRejectsWhatIsNotPromQL(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`sum(rate(up[5m])`, `expected ")"`},
		{`sum(up))`, `unexpected ")"`},
		{`up{job="a"`, `expected , or }`},
		{`up{job="a}`, `unterminated string`},
		{`rate(up[5m)`, `unterminated range`},
		{`rate(up[5m)])`, `bracket inside range`},
		{`rate(up[5m]])`, `unbalanced ]`},
		{`rate(up[five])`, `bad range`},
		{`rat(up[5m])`, `unknown function "rat"`},
		{`up{job:"a"}`, `expected a label name`},
		{`up{job=a}`, `expected a quoted value`},
		{`up{job~"a"}`, `unexpected character`},
		{`up +`, `unexpected ""`},
		{`up and`, `unexpected ""`},
		{`sum by (job, ) up`, `expected "("`},
		{`sum by ("job") (up)`, `expected a label name`},
		{`{}`, `empty selector`},
		{`up{job=~$job}`, `unexpected character '$'`},
		{`up and by`, `keyword "by"`},
	} {
		_, err := Parse(tc.expr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.expr, err, tc.want)
		}
	}
}

func TestParseReportsBareAggregations(t *testing.T) {
	got, err := Parse(`sum(rate(up[5m])) / count without (instance) (up)`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Aggregation{{"sum", false}, {"count", true}}
	if !reflect.DeepEqual(got.Aggregations, want) {
		t.Errorf("Aggregations = %+v, want %+v", got.Aggregations, want)
	}
}

func TestSpecSeriesName(t *testing.T) {
	for name, want := range map[string]bool{
		"probegate_backend_state":                 true,
		"probegate_probe_duration_seconds_bucket": true,
		"probegate_probe_duration_seconds_count":  true,
		"probegate_probe_duration_seconds":        false, // a histogram has no series of its bare name
		"probegate_backend_state_bucket":          false,
		"probegate_backend_stat":                  false,
		"up":                                      false,
	} {
		if got := SpecSeriesName(name); got != want {
			t.Errorf("SpecSeriesName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestIsRecordingRuleName(t *testing.T) {
	for name, want := range map[string]bool{
		"instance_backend:probegate_probes:rate5m": true,
		"job:probegate_backends_configured:sum":    true,
		"probegate_probes:rate5m":                  false,
		"a:b:c:d":                                  false,
		"instance::rate5m":                         false,
		"instance:probegate-probes:rate5m":         false,
	} {
		if got := IsRecordingRuleName(name); got != want {
			t.Errorf("IsRecordingRuleName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestLabelValues(t *testing.T) {
	sel, label, err := LabelValues(`label_values(probegate_build_info{job=~"$job"}, instance)`)
	if err != nil || sel != `probegate_build_info{job=~"$job"}` || label != "instance" {
		t.Errorf("LabelValues = %q, %q, %v", sel, label, err)
	}
	for _, q := range []string{`label_values(instance)`, `query_result(up)`, `label_values(up, "x")`} {
		if _, _, err := LabelValues(q); err == nil {
			t.Errorf("LabelValues(%q) accepted it", q)
		}
	}
}
