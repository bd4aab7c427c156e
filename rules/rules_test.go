package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/probegate/probegate/mixin/lint"
)

// defaultSelector is the mixin's default _config.probegateSelector as a
// matcher: every selector of a generated rule must carry it.
var defaultSelector = lint.Matcher{Label: "job", Op: "=", Value: "probegate"}

const runbookURLPattern = "https://github.com/probegate/probegate/blob/main/mixin/runbook.md#%s"

// promisedAlerts are the alerts the mixin promises (mixin/README.md), which
// labels their description must name, and whether they aggregate over
// replicas: those name the job instead of the instance, which they no
// longer carry.
var promisedAlerts = map[string]struct{ backend, probePath, acrossReplicas bool }{
	"ProbegateDown":                             {},
	"ProbegateProbePathMisconfigured":           {backend: true, probePath: true, acrossReplicas: true},
	"ProbegatePoolProbePathMisconfigured":       {},
	"ProbegateBackendUnhealthy":                 {backend: true, acrossReplicas: true},
	"ProbegateBackendFlapping":                  {backend: true, acrossReplicas: true},
	"ProbegatePoolFailOpen":                     {},
	"ProbegatePartialFanout":                    {},
	"ProbegateBackendStraggling":                {backend: true, acrossReplicas: true},
	"ProbegateOutlierEjectionsRepeated":         {},
	"ProbegateNotReady":                         {},
	"ProbegateReadinessBudgetBlocksMaintenance": {},
	"ProbegateReadinessBudgetGuardsNothing":     {},
	"ProbegateConfigReloadFailed":               {},
	"ProbegateBackendMaintenanceLong":           {backend: true, acrossReplicas: true},
	"ProbegateBackendCertExpiringSoon":          {backend: true, acrossReplicas: true},
	"ProbegateMaintenanceStoreDown":             {},
	"ProbegateReadinessPeerOverride":            {acrossReplicas: true},
	"ProbegateGroupDown":                        {acrossReplicas: true},
	"ProbegateGroupAtRisk":                      {acrossReplicas: true},
	"ProbegateVantageDisagreement":              {acrossReplicas: true},
	"ProbegateLocalProbing":                     {},
}

// replicaLabels are the mixin's default _config.replicaLabels: the labels
// that tell replicas apart, which the alerts across replicas aggregate away.
var replicaLabels = []string{"instance", "pod"}

// checkAcrossReplicas checks that the whole expression is an aggregation
// without exactly the replica labels, so that R replicas raise one alert.
func checkAcrossReplicas(t *testing.T, name, expr string, parsed lint.Expr) {
	t.Helper()
	for _, agg := range parsed.Aggregations {
		if agg.Outermost && agg.Without && slices.Equal(agg.Labels, replicaLabels) {
			return
		}
	}
	t.Errorf("%s: is not an aggregation without (%s) over replicas:\n%s", name, strings.Join(replicaLabels, ", "), expr)
}

var (
	alertNamePattern = regexp.MustCompile(`^Probegate(?:[A-Z][a-z0-9]*)+$`)
	severities       = map[string]bool{"critical": true, "warning": true, "info": true}
)

func loadRules(t *testing.T, name string) []lint.Rule {
	t.Helper()
	rf, err := lint.LoadRuleFile(name)
	if err != nil {
		t.Fatal(err)
	}
	rules := rf.Rules()
	if len(rules) == 0 {
		t.Fatalf("%s has no rules", name)
	}
	return rules
}

// recordedNames are the series the recording rules write.
func recordedNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, r := range loadRules(t, "probegate-rules.yaml") {
		names[r.Record] = true
	}
	return names
}

// scrapeSeries are the series Prometheus itself writes for every target,
// which rules may query besides probegate's own metrics.
var scrapeSeries = map[string]bool{"up": true}

// checkExpr checks what every generated expression must satisfy: it parses,
// queries only probegate's metrics, scrape series or recorded series,
// selects them with the configured selector, and aggregates with by or
// without.
func checkExpr(t *testing.T, rule, expr string, recorded map[string]bool) lint.Expr {
	t.Helper()
	parsed, err := lint.Parse(expr)
	if err != nil {
		t.Errorf("%s: expression does not parse: %v\n%s", rule, err, expr)
		return parsed
	}
	for _, sel := range parsed.Selectors {
		if !lint.DocumentedSeriesName(sel.Metric) && !recorded[sel.Metric] && !scrapeSeries[sel.Metric] {
			t.Errorf("%s: %q is neither a probegate metric, a scrape series nor a recording rule", rule, sel.Metric)
		}
		if !sel.Has(defaultSelector.Label, defaultSelector.Op, defaultSelector.Value) {
			t.Errorf("%s: selector of %s lacks %s (_config.probegateSelector)", rule, sel.Metric, defaultSelector)
		}
	}
	for _, agg := range parsed.Aggregations {
		if !agg.Grouped {
			t.Errorf("%s: %s() aggregates without `by` or `without`, dropping the target's labels", rule, agg.Op)
		}
	}
	return parsed
}

func TestEveryPromisedAlertIsDefined(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range loadRules(t, "probegate-alerts.yaml") {
		if r.Alert == "" {
			t.Errorf("recording rule %s in the alerts file", r.Record)
		}
		seen[r.Alert] = true
	}
	for name := range promisedAlerts {
		if !seen[name] {
			t.Errorf("alert %s, which the mixin promises, is missing", name)
		}
	}
}

func TestAlertsFollowConventions(t *testing.T) {
	recorded := recordedNames(t)
	runbook, err := os.ReadFile("../mixin/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range loadRules(t, "probegate-alerts.yaml") {
		name := r.Alert
		if !alertNamePattern.MatchString(name) {
			t.Errorf("%s: not a CamelCase name starting with Probegate", name)
		}
		if !severities[r.Labels["severity"]] {
			t.Errorf("%s: severity %q, want critical, warning or info", name, r.Labels["severity"])
		}
		if d, err := model.ParseDuration(r.For); err != nil || d <= 0 {
			t.Errorf("%s: for %q is not a positive duration", name, r.For)
		}
		summary, description := r.Annotations["summary"], r.Annotations["description"]
		wants := promisedAlerts[name]
		// A summary stays the same while its alert fires: it may name the
		// alert's own labels, never its value; a per-backend alert's names
		// the backend.
		if summary == "" || strings.Count(summary, "{{") != strings.Count(summary, "{{ $labels.") || !strings.HasSuffix(summary, ".") {
			t.Errorf("%s: summary %q is not one sentence that templates at most $labels", name, summary)
		}
		if wants.backend && !strings.Contains(summary, "{{ $labels.backend }}") {
			t.Errorf("%s: summary %q does not name the backend", name, summary)
		}
		mustName := []string{"{{ $labels.instance }}"}
		if wants.acrossReplicas {
			mustName = []string{"{{ $labels.job }}", "$value"}
			for _, label := range replicaLabels {
				if strings.Contains(description, "$labels."+label) {
					t.Errorf("%s: aggregates over replicas but its description names $labels.%s: %q", name, label, description)
				}
			}
		}
		if wants.backend {
			mustName = append(mustName, "{{ $labels.backend }}")
		}
		if wants.probePath {
			mustName = append(mustName, "{{ $labels.probe_path }}")
		}
		for _, label := range mustName {
			if !strings.Contains(description, label) {
				t.Errorf("%s: description does not name %s: %q", name, label, description)
			}
		}
		if want := fmt.Sprintf(runbookURLPattern, strings.ToLower(name)); r.Annotations["runbook_url"] != want {
			t.Errorf("%s: runbook_url %q, want %q", name, r.Annotations["runbook_url"], want)
		}
		if !strings.Contains(string(runbook), "\n## "+name+"\n") {
			t.Errorf("%s: mixin/runbook.md has no section \"## %s\"", name, name)
		}
		parsed := checkExpr(t, name, r.Expr, recorded)
		if wants.acrossReplicas {
			checkAcrossReplicas(t, name, r.Expr, parsed)
		}
		if wants.probePath && !slices.Contains(parsed.Metrics(), "probegate_backend_info") {
			t.Errorf("%s: names the probe path but does not join probegate_backend_info", name)
		}
	}
}

var operationsWindow = regexp.MustCompile(`\d+[smhdwy]$`)

func TestRecordingRulesFollowConventions(t *testing.T) {
	recorded := recordedNames(t)
	for _, r := range loadRules(t, "probegate-rules.yaml") {
		name := r.Record
		if r.Alert != "" || !lint.IsRecordingRuleName(name) {
			t.Errorf("%q is not named level:metric:operations", name)
			continue
		}
		parts := strings.Split(name, ":")
		metric, operations := parts[1], parts[2]
		if !strings.HasPrefix(metric, "probegate_") || strings.HasSuffix(metric, "_total") {
			t.Errorf("%s: the metric part should be the probegate metric without _total", name)
		}
		parsed := checkExpr(t, name, r.Expr, recorded)
		// The operations name the window the expression uses: rate5m is a
		// rate over [5m].
		for _, window := range parsed.Ranges {
			if operationsWindow.FindString(operations) != window {
				t.Errorf("%s: operations %q do not end with its range [%s]", name, operations, window)
			}
		}
	}
}

// testFile is the part of a promtool test file the coverage check reads.
type testFile struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			AlertName string           `yaml:"alertname"`
			ExpAlerts []map[string]any `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromQLExprTest []struct {
			Expr string `yaml:"expr"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

func loadTests(t *testing.T) map[string]testFile {
	t.Helper()
	paths, err := filepath.Glob("tests/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no promtool tests in tests/: %v", err)
	}
	files := map[string]testFile{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var tf testFile
		if err := yaml.Unmarshal(data, &tf); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		files[path] = tf
	}
	return files
}

// TestEveryAlertHasAFiringAndASilentCase reads the promtool tests: an alert
// whose only test expects it to fire would pass with an expression that is
// always true, and one whose only test expects silence with one that never is.
func TestEveryAlertHasAFiringAndASilentCase(t *testing.T) {
	fires, silent := map[string]int{}, map[string]int{}
	for _, tf := range loadTests(t) {
		for _, group := range tf.Tests {
			for _, c := range group.AlertRuleTest {
				if len(c.ExpAlerts) > 0 {
					fires[c.AlertName]++
				} else {
					silent[c.AlertName]++
				}
			}
		}
	}
	alerts := map[string]bool{}
	for _, r := range loadRules(t, "probegate-alerts.yaml") {
		alerts[r.Alert] = true
		if fires[r.Alert] == 0 {
			t.Errorf("%s: no promtool case where it fires", r.Alert)
		}
		if silent[r.Alert] == 0 {
			t.Errorf("%s: no promtool case where it must not fire", r.Alert)
		}
	}
	for name := range fires {
		if !alerts[name] {
			t.Errorf("promtool tests expect alert %s, which the rules do not define", name)
		}
	}
}

func TestEveryRecordingRuleIsTested(t *testing.T) {
	tested := map[string]bool{}
	for _, tf := range loadTests(t) {
		for _, group := range tf.Tests {
			for _, c := range group.PromQLExprTest {
				tested[strings.TrimSpace(c.Expr)] = true
			}
		}
	}
	for name := range recordedNames(t) {
		if !tested[name] {
			t.Errorf("recording rule %s has no promql_expr_test", name)
		}
	}
}

func TestTestsLoadTheGeneratedFiles(t *testing.T) {
	for path, tf := range loadTests(t) {
		if len(tf.RuleFiles) == 0 {
			t.Errorf("%s loads no rule file", path)
		}
		for _, rf := range tf.RuleFiles {
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), rf)); err != nil {
				t.Errorf("%s: rule file %s: %v", path, rf, err)
			}
		}
	}
}
