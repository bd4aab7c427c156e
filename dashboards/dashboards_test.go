package dashboards

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/probegate/probegate/mixin/lint"
)

const datasourceUID = "${datasource}"

// wantDashboard is what each generated file must be. The uids are part of
// the contract: links and bookmarks use them, so they never change.
type wantDashboard struct {
	uid, title string
	variables  []string // query variables besides datasource, in order
	panels     []string // titles that must be there
}

var want = map[string]wantDashboard{
	"probegate-overview.json": {
		uid:       "probegate-overview",
		title:     "probegate / Overview",
		variables: []string{"job", "instance"},
		panels: []string{
			"Backends by state", "In service vs configured", "Fail-open", "In maintenance",
			"Readiness and draining", "Readiness budget", "Partial fan-out ratio",
			"Fan-out requests", "Fan-out latency", "Fan-out backend errors by reason",
			"Probe results by class", "Probe failures and refusals by reason", "Probe latency",
			"Probing locally", "Backends each replica probes", "Vantage point disagreements",
		},
	},
	"probegate-backend.json": {
		uid:       "probegate-backend",
		title:     "probegate / Backend",
		variables: []string{"job", "instance", "backend"},
		panels: []string{
			"State timeline", "Probe results by reason", "Probe failure ratio", "Last probe status code",
			"Verified, reachable and in service",
		},
	},
}

func load(t *testing.T) map[string]lint.Dashboard {
	t.Helper()
	return loadDir(t, ".")
}

// loadDir loads the dashboards in dir, which must be exactly the ones of
// want.
func loadDir(t *testing.T, dir string) map[string]lint.Dashboard {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	dashboards := map[string]lint.Dashboard{}
	for _, path := range paths {
		d, err := lint.LoadDashboard(path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(path)
		dashboards[name] = d
		names = append(names, name)
	}
	var wantNames []string
	for name := range want {
		wantNames = append(wantNames, name)
	}
	sort.Strings(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Fatalf("dashboards %v, want %v", names, wantNames)
	}
	return dashboards
}

func recordedNames(t *testing.T) map[string]bool {
	t.Helper()
	rf, err := lint.LoadRuleFile("../rules/probegate-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range rf.Rules() {
		names[r.Record] = true
	}
	return names
}

func TestUIDsAndTitlesAreStable(t *testing.T) {
	uids := map[string]string{}
	for name, d := range load(t) {
		w := want[name]
		if d.UID != w.uid || d.Title != w.title {
			t.Errorf("%s: uid %q title %q, want uid %q title %q", name, d.UID, d.Title, w.uid, w.title)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share uid %q", name, other, d.UID)
		}
		uids[d.UID] = name
		if !slices.Contains(d.Tags, "probegate") {
			t.Errorf("%s: tags %v lack probegate", name, d.Tags)
		}
	}
}

func TestVariables(t *testing.T) {
	recorded := recordedNames(t)
	for name, d := range load(t) {
		vars := d.Templating.List
		if len(vars) == 0 || vars[0].Name != "datasource" || vars[0].Type != "datasource" || string(vars[0].Query) != `"prometheus"` {
			t.Errorf("%s: the first variable is not a Prometheus datasource variable named datasource", name)
			continue
		}
		var names []string
		for _, v := range vars[1:] {
			names = append(names, v.Name)
			if v.Type != "query" || v.Datasource == nil || v.Datasource.UID != datasourceUID {
				t.Errorf("%s: variable %s is not a query variable on %s", name, v.Name, datasourceUID)
				continue
			}
			sel, label, err := lint.LabelValues(v.Definition)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if label != v.Name {
				t.Errorf("%s: variable %s lists values of label %s", name, v.Name, label)
			}
			parsed := parse(t, name+" variable "+v.Name, sel, recorded)
			// Each variable is narrowed by the ones before it, so that
			// choosing a job lists only its instances.
			for _, before := range names[:len(names)-1] {
				for _, s := range parsed.Selectors {
					if !s.Has(before, "=~", "$"+before) {
						t.Errorf("%s: variable %s is not narrowed by $%s", name, v.Name, before)
					}
				}
			}
		}
		if !slices.Equal(names, want[name].variables) {
			t.Errorf("%s: variables %v after datasource, want %v", name, names, want[name].variables)
		}
	}
}

// parse checks one query: it parses as PromQL, names only documented metrics
// or recording rules, and uses $__rate_interval for every range.
func parse(t *testing.T, where, expr string, recorded map[string]bool) lint.Expr {
	t.Helper()
	parsed, err := lint.Parse(expr)
	if err != nil {
		t.Errorf("%s: %v\n%s", where, err, expr)
		return parsed
	}
	if len(parsed.Selectors) == 0 {
		t.Errorf("%s: queries no metric: %s", where, expr)
	}
	for _, s := range parsed.Selectors {
		if !lint.DocumentedSeriesName(s.Metric) && !recorded[s.Metric] {
			t.Errorf("%s: %q is neither a documented probegate metric nor a recording rule", where, s.Metric)
		}
	}
	for _, r := range parsed.Ranges {
		if r != "$__rate_interval" {
			t.Errorf("%s: range [%s], want [$__rate_interval]", where, r)
		}
	}
	return parsed
}

func TestPanels(t *testing.T) {
	recorded := recordedNames(t)
	for name, d := range load(t) {
		ids := map[int]bool{}
		titles := map[string]bool{}
		for _, p := range d.AllPanels() {
			where := fmt.Sprintf("%s: panel %q", name, p.Title)
			titles[p.Title] = true
			if p.ID <= 0 || ids[p.ID] {
				t.Errorf("%s: id %d is not positive and unique", where, p.ID)
			}
			ids[p.ID] = true
			if p.Description == "" {
				t.Errorf("%s: no description", where)
			}
			if p.FieldConfig.Defaults.Unit == "" {
				t.Errorf("%s: no unit", where)
			}
			if p.Datasource.UID != datasourceUID {
				t.Errorf("%s: data source %q, want %s", where, p.Datasource.UID, datasourceUID)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: no queries", where)
			}
			for _, target := range p.Targets {
				if target.Datasource.UID != datasourceUID {
					t.Errorf("%s: query %s on data source %q, want %s", where, target.RefID, target.Datasource.UID, datasourceUID)
				}
				parsed := parse(t, where, target.Expr, recorded)
				for _, s := range parsed.Selectors {
					for _, v := range want[name].variables {
						if !s.Has(v, "=~", "$"+v) {
							t.Errorf("%s: selector of %s lacks %s=~\"$%s\"", where, s.Metric, v, v)
						}
					}
				}
			}
		}
		for _, title := range want[name].panels {
			if !titles[title] {
				t.Errorf("%s: no panel %q", name, title)
			}
		}
	}
}

func TestLayoutFitsTheGrid(t *testing.T) {
	for name, d := range load(t) {
		cells := map[[2]int]string{}
		for _, p := range d.AllPanels() {
			g := p.GridPos
			if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
				t.Errorf("%s: panel %q at %+v is off Grafana's 24-column grid", name, p.Title, g)
				continue
			}
			overlaps := map[string]bool{}
			for x := g.X; x < g.X+g.W; x++ {
				for y := g.Y; y < g.Y+g.H; y++ {
					if other, taken := cells[[2]int{x, y}]; taken && !overlaps[other] {
						overlaps[other] = true
						t.Errorf("%s: panels %q and %q overlap", name, other, p.Title)
					}
					cells[[2]int{x, y}] = p.Title
				}
			}
		}
	}
}

// environmentSpecific matches what would tie a dashboard to one Grafana or
// one network: addresses, host names, ports, absolute links.
var environmentSpecific = regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}\b|localhost|https?://|:\d{2,5}\b`)

func TestNothingEnvironmentSpecific(t *testing.T) {
	for name, d := range load(t) {
		if id, ok := d.Raw["id"]; ok && id != nil {
			t.Errorf("%s: dashboard id %v; Grafana assigns ids, a shared dashboard has none", name, id)
		}
		for _, key := range []string{"__inputs", "__requires", "version", "iteration"} {
			if _, ok := d.Raw[key]; ok {
				t.Errorf("%s: has %s, which belongs to one Grafana's export", name, key)
			}
		}
		walk(d.Raw, "", func(path string, key string, value any) {
			switch v := value.(type) {
			case string:
				if environmentSpecific.MatchString(v) {
					t.Errorf("%s: %s = %q looks environment-specific", name, path, v)
				}
			case map[string]any:
				if key == "datasource" {
					if uid, _ := v["uid"].(string); uid != datasourceUID {
						t.Errorf("%s: %s points at data source %q, want %s", name, path, uid, datasourceUID)
					}
				}
				if key == "current" && len(v) > 0 {
					t.Errorf("%s: %s records a selection from one Grafana", name, path)
				}
			}
		})
	}
}

// walk calls fn for every value in a decoded JSON document with its path
// and the key it is stored under.
func walk(value any, path string, fn func(path, key string, value any)) {
	switch v := value.(type) {
	case map[string]any:
		for k, child := range v {
			fn(path+"."+k, k, child)
			walk(child, path+"."+k, fn)
		}
	case []any:
		for i, child := range v {
			p := fmt.Sprintf("%s[%d]", path, i)
			fn(p, "", child)
			walk(child, p, fn)
		}
	}
}

// selectors lists every selector of a dashboard: those of its panels'
// queries and of its variables, each with where it is.
func selectors(t *testing.T, name string, d lint.Dashboard) map[string][]lint.Selector {
	t.Helper()
	out := map[string][]lint.Selector{}
	for _, p := range d.AllPanels() {
		for _, target := range p.Targets {
			parsed, err := lint.Parse(target.Expr)
			if err != nil {
				t.Fatalf("%s: panel %q: %v", name, p.Title, err)
			}
			where := fmt.Sprintf("panel %q query %s", p.Title, target.RefID)
			out[where] = parsed.Selectors
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		sel, _, err := lint.LabelValues(v.Definition)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		parsed, err := lint.Parse(sel)
		if err != nil {
			t.Fatalf("%s: variable %s: %v", name, v.Name, err)
		}
		out["variable "+v.Name] = parsed.Selectors
	}
	return out
}

// checkSelector fails for every query and variable of the dashboards
// whose selectors lack one of the matchers.
func checkSelector(t *testing.T, dashboards map[string]lint.Dashboard, matchers ...lint.Matcher) {
	t.Helper()
	checkSelectorExcept(t, dashboards, "", matchers...)
}

// checkSelectorExcept is checkSelector for every query and variable but
// the one at except (such as "variable cluster").
func checkSelectorExcept(t *testing.T, dashboards map[string]lint.Dashboard, except string, matchers ...lint.Matcher) {
	t.Helper()
	for name, d := range dashboards {
		for where, sels := range selectors(t, name, d) {
			if where == except {
				continue
			}
			if len(sels) == 0 {
				t.Errorf("%s: %s selects no series", name, where)
			}
			for _, s := range sels {
				for _, m := range matchers {
					if !s.Has(m.Label, m.Op, m.Value) {
						t.Errorf("%s: %s: selector of %s lacks %s (_config.probegateSelector)", name, where, s.Metric, m)
					}
				}
			}
		}
	}
}

// TestDefaultSelectorInEveryQuery: the committed dashboards carry the
// default _config.probegateSelector in every query and variable.
func TestDefaultSelectorInEveryQuery(t *testing.T) {
	checkSelector(t, load(t), lint.Matcher{Label: "job", Op: "=", Value: "probegate"})
}

// TestCustomSelectorInEveryQuery generates the dashboards with the
// multi-cluster selector of mixin/README.md: every query and every variable
// must carry all of it, so that a Grafana over several clusters shows one
// cluster's probegate only.
func TestCustomSelectorInEveryQuery(t *testing.T) {
	checkSelector(t, generate(t, `{probegateSelector: 'job="edge-lb", cluster="eu-1"'}`),
		lint.Matcher{Label: "job", Op: "=", Value: "edge-lb"},
		lint.Matcher{Label: "cluster", Op: "=", Value: "eu-1"})
}

// generate builds the dashboards from the mixin with config merged into
// its _config, into a scratch folder, and loads them.
func generate(t *testing.T, config string) map[string]lint.Dashboard {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "tool", "jsonnet", "-S", "-m", dir,
		"--tla-code", "config="+config, filepath.Join("mixin", "build", "dashboards.jsonnet"))
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate dashboards with %s: %v\n%s", config, err, out)
	}
	return loadDir(t, dir)
}

// TestMultiClusterDashboards: with showMultiCluster, every dashboard has
// a cluster variable listing the clusterLabel values of the mixin's
// selector, ahead of the variables that depend on it, and every query and
// every other variable keeps to the chosen cluster. Without it, which
// the committed dashboards are, there is no cluster variable.
func TestMultiClusterDashboards(t *testing.T) {
	for name, d := range load(t) {
		for _, v := range d.Templating.List {
			if v.Name == "cluster" {
				t.Errorf("%s has a cluster variable while showMultiCluster is off", name)
			}
		}
	}
	dashboards := generate(t, `{showMultiCluster: true, clusterLabel: 'k8s_cluster'}`)
	for name, d := range dashboards {
		vars := d.Templating.List
		if len(vars) < 2 || vars[1].Name != "cluster" || vars[1].Type != "query" {
			t.Errorf("%s: the variable after the data source is not a cluster query variable: %+v", name, vars)
			continue
		}
		sel, label, err := lint.LabelValues(vars[1].Definition)
		if err != nil {
			t.Fatalf("%s: variable cluster: %v", name, err)
		}
		parsed, err := lint.Parse(sel)
		if err != nil {
			t.Fatalf("%s: variable cluster: %v", name, err)
		}
		if label != "k8s_cluster" || len(parsed.Selectors) != 1 || !parsed.Selectors[0].Has("job", "=", "probegate") {
			t.Errorf("%s: variable cluster is %s, want the k8s_cluster values under job=\"probegate\"", name, vars[1].Definition)
		}
	}
	checkSelectorExcept(t, dashboards, "variable cluster",
		lint.Matcher{Label: "job", Op: "=", Value: "probegate"},
		lint.Matcher{Label: "k8s_cluster", Op: "=", Value: "$cluster"})
}

// TestRatioPanelsShowNoNaN: a panel of ratios queries only recorded
// ratios, which divide by their denominator only where it is above zero
// (rules/tests checks they have no sample without traffic), so no ratio
// panel divides by zero itself.
func TestRatioPanelsShowNoNaN(t *testing.T) {
	for name, d := range load(t) {
		for _, p := range d.AllPanels() {
			if p.FieldConfig.Defaults.Unit != "percentunit" {
				continue
			}
			for _, target := range p.Targets {
				parsed, err := lint.Parse(target.Expr)
				if err != nil {
					t.Fatalf("%s: panel %q: %v", name, p.Title, err)
				}
				for _, m := range parsed.Metrics() {
					if !lint.IsRecordingRuleName(m) || !strings.Contains(m, ":ratio_") {
						t.Errorf("%s: ratio panel %q queries %s, not a recorded ratio", name, p.Title, m)
					}
				}
			}
		}
	}
}

// TestDashboardsUseTheRecordingRules: every per-instance recording rule is
// queried by a dashboard, or feeds one that is. (The per-job rules serve
// fleet views and federation.)
func TestDashboardsUseTheRecordingRules(t *testing.T) {
	rf, err := lint.LoadRuleFile("../rules/probegate-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, d := range load(t) {
		exprs, err := d.Expressions()
		if err != nil {
			t.Fatal(err)
		}
		for _, expr := range exprs {
			parsed, err := lint.Parse(expr)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range parsed.Metrics() {
				used[m] = true
			}
		}
	}
	if len(used) == 0 {
		t.Fatal("the dashboards query nothing")
	}
	// A rule read by a used rule is used too; the rules file lists inputs
	// before the rules that read them, so walking it backwards once
	// settles every chain.
	rules := rf.Rules()
	for i := len(rules) - 1; i >= 0; i-- {
		if !used[rules[i].Record] {
			continue
		}
		parsed, err := lint.Parse(rules[i].Expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range parsed.Metrics() {
			used[m] = true
		}
	}
	for _, r := range rules {
		if strings.HasPrefix(r.Record, "instance") && !used[r.Record] {
			t.Errorf("recording rule %s is used by no dashboard", r.Record)
		}
	}
}
