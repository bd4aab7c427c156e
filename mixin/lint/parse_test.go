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
			{Metric: "probegate_probe_failures_total", Matchers: []Matcher{{"job", "=", "probegate"}, {"reason", "!~", "http_.*"}}},
			{Metric: "probegate_probes_total"},
			{Metric: "x_bucket"},
		},
		Ranges: []string{"5m", "$__rate_interval"},
		Aggregations: []Aggregation{
			{Op: "sum", Grouped: true, Without: true, Labels: []string{"reason"}},
			{Op: "sum", Grouped: true, Labels: []string{"job"}},
			{Op: "max", Grouped: true, Labels: []string{"le"}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
	if !got.Selectors[0].Has("job", "=", "probegate") || got.Selectors[1].Has("job", "=", "probegate") {
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
		`rate(up[${__rate_interval}] offset $__interval)`,
	} {
		if _, err := Parse(expr); err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
		}
	}
}

func TestParseRejectsWhatPrometheusRejects(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{`sum(rate(up[5m])`, `unclosed left parenthesis`},
		{`sum(up))`, `unexpected right parenthesis`},
		{`up{job="a"`, `unexpected end of input inside braces`},
		{`up{job="a}`, `unterminated quoted string`},
		{`rate(up[5m)`, `unexpected ")" in subquery or range`},
		{`rate(up[5m]])`, `unexpected right bracket`},
		{`rate(up[five])`, `unexpected character in duration expression`},
		{`rat(up[5m])`, `unknown function with name "rat"`},
		{`up{job:"a"}`, `unexpected character inside braces: ':'`},
		{`up{job=a}`, `unexpected identifier "a" in label matching, expected string`},
		{`up +`, `unexpected end of input`},
		{`sum by (job, ) up`, `unexpected identifier "up" in aggregation`},
		{`{}`, `vector selector must contain at least one non-empty matcher`},
		{`rate(up)`, `expected type range vector in call to function "rate"`},
		{`sum(up[5m])`, `expected type instant vector in aggregation expression`},
		{`up{job="a"} offset $__range $__range`, `1:29: parse error: unexpected duration "$__range"`},
		{`rate(up[$__rate_interval]) + rate(up[5m)`, `1:40: parse error: unexpected ")"`},
	} {
		_, err := Parse(tc.expr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", tc.expr, err, tc.want)
		}
	}
}

func TestParseNamesTheDurationVariables(t *testing.T) {
	for _, expr := range []string{`up{job=~$job}`, `rate(up[$window])`, `rate(up[$__interval_ms])`} {
		_, err := Parse(expr)
		if err == nil || !strings.Contains(err.Error(), "be one of $__interval, $__range, $__rate_interval") {
			t.Errorf("Parse(%q) = %v, want an error naming the variables that may stand for a duration", expr, err)
		}
	}
}

func TestParseReportsVariablesAsWritten(t *testing.T) {
	got, err := Parse(`max_over_time(rate(up{a="$__interval", b="${__range}", c="999993ms", d="${job}"}[$__rate_interval])[${__range}:$__interval])`)
	if err != nil {
		t.Fatal(err)
	}
	want := Expr{
		Selectors: []Selector{{Metric: "up", Matchers: []Matcher{
			{"a", "=", "$__interval"}, {"b", "=", "${__range}"}, {"c", "=", "$__rate_interval"}, {"d", "=", "${job}"},
		}}},
		Ranges: []string{"$__range:$__interval", "$__rate_interval"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
	// A duration is reported in PromQL's own notation.
	if got, err := Parse(`rate(up[90s]) + max_over_time(up[1h:])`); err != nil || !reflect.DeepEqual(got.Ranges, []string{"1m30s", "1h:"}) {
		t.Errorf("Ranges = %q, %v; want [1m30s 1h:]", got.Ranges, err)
	}
}

func TestStandInsAreAsLongAsTheirReferences(t *testing.T) {
	for name, d := range durationVariables {
		if ref, text := "$"+name, standIn(d, 0); len(text) > len(ref) {
			t.Errorf("the stand-in %s of %s is longer than the reference: error positions would shift", text, ref)
		}
	}
}

func TestParseReportsBareAggregations(t *testing.T) {
	got, err := Parse(`sum(rate(up[5m])) / count without (instance) (up) + sum by () (up)`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Aggregation{{Op: "sum"}, {Op: "count", Grouped: true, Without: true, Labels: []string{"instance"}}, {Op: "sum", Labels: []string{}}}
	if !reflect.DeepEqual(got.Aggregations, want) {
		t.Errorf("Aggregations = %+v, want %+v", got.Aggregations, want)
	}
}

func TestParseReportsTheOutermostAggregation(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []bool
	}{
		{`count without (instance) (sum(up) > 0)`, []bool{true, false}},
		{`((max by (job) (up)))`, []bool{true}},
		{`count without (instance) (up) > 0`, []bool{false}},
		{`sum(up) / sum(up)`, []bool{false, false}},
	} {
		got, err := Parse(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		var outermost []bool
		for _, a := range got.Aggregations {
			outermost = append(outermost, a.Outermost)
		}
		if !reflect.DeepEqual(outermost, tc.want) {
			t.Errorf("Parse(%q): outermost %v, want %v", tc.expr, outermost, tc.want)
		}
	}
}

func TestParseLeavesOutTheNameMatcher(t *testing.T) {
	got, err := Parse(`up{job="a"} + {__name__="up", job="b"}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Selector{
		{Metric: "up", Matchers: []Matcher{{"job", "=", "a"}}},
		{Matchers: []Matcher{{"__name__", "=", "up"}, {"job", "=", "b"}}},
	}
	if !reflect.DeepEqual(got.Selectors, want) {
		t.Errorf("Selectors = %+v, want %+v", got.Selectors, want)
	}
}

func TestMatcherMatches(t *testing.T) {
	for _, tc := range []struct {
		m     Matcher
		value string
		want  bool
	}{
		{Matcher{"job", "=", "probegate"}, "probegate", true},
		{Matcher{"job", "=", "probegate"}, "eu1-probegate", false},
		{Matcher{"job", "!=", "probegate"}, "eu1-probegate", true},
		{Matcher{"job", "=~", "probe.*"}, "probegate", true},
		{Matcher{"job", "=~", "probe"}, "probegate", false}, // anchored at both ends
		{Matcher{"job", "!~", "eu1-.*"}, "probegate", true},
	} {
		if got, err := tc.m.Matches(tc.value); err != nil || got != tc.want {
			t.Errorf("%s matches %q = %v, %v; want %v", tc.m, tc.value, got, err, tc.want)
		}
	}
	for _, m := range []Matcher{{"job", "~", "a"}, {"job", "=~", "("}} {
		if _, err := m.Matches("a"); err == nil {
			t.Errorf("%+v.Matches accepted it", m)
		}
	}
}

func TestDocumentedSeriesName(t *testing.T) {
	for name, want := range map[string]bool{
		"probegate_backend_state":                 true,
		"probegate_probe_duration_seconds_bucket": true,
		"probegate_probe_duration_seconds_count":  true,
		"probegate_probe_duration_seconds":        false, // a histogram has no series of its bare name
		"probegate_backend_state_bucket":          false,
		"probegate_backend_stat":                  false,
		"up":                                      false,
	} {
		if got := DocumentedSeriesName(name); got != want {
			t.Errorf("DocumentedSeriesName(%q) = %v, want %v", name, got, want)
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
