package lint

import (
	"encoding/json"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// RuleFile is a Prometheus rule file as promtool reads it.
type RuleFile struct {
	Groups []RuleGroup `yaml:"groups"`
}

// RuleGroup is one group of a rule file.
type RuleGroup struct {
	Name  string `yaml:"name"`
	Rules []Rule `yaml:"rules"`
}

// Rule is an alerting rule (Alert set) or a recording rule (Record set).
type Rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// LoadRuleFile reads and decodes a rule file, rejecting unknown keys.
func LoadRuleFile(path string) (RuleFile, error) {
	var rf RuleFile
	f, err := os.Open(path)
	if err != nil {
		return rf, fmt.Errorf("read rule file: %w", err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		return rf, fmt.Errorf("decode rule file %s: %w", path, err)
	}
	return rf, nil
}

// Rules lists every rule of every group.
func (rf RuleFile) Rules() []Rule {
	var rules []Rule
	for _, g := range rf.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// Dashboard is the part of a Grafana dashboard the lint reads; Raw keeps
// the whole document for checks that walk it.
type Dashboard struct {
	UID        string   `json:"uid"`
	Title      string   `json:"title"`
	Tags       []string `json:"tags"`
	Panels     []Panel  `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
	Raw map[string]any `json:"-"`
}

// Panel is one dashboard panel; rows nest further panels.
type Panel struct {
	ID          int           `json:"id"`
	Type        string        `json:"type"`
	Title       string        `json:"title"`
	Description string        `json:"description"`
	Datasource  DatasourceRef `json:"datasource"`
	Targets     []Target      `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	GridPos struct {
		X int `json:"x"`
		Y int `json:"y"`
		W int `json:"w"`
		H int `json:"h"`
	} `json:"gridPos"`
	Panels []Panel `json:"panels"`
}

// Target is one query of a panel.
type Target struct {
	Expr       string        `json:"expr"`
	RefID      string        `json:"refId"`
	Datasource DatasourceRef `json:"datasource"`
}

// DatasourceRef points at a data source, here always the ${datasource}
// variable.
type DatasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Variable is one templating variable. Query is a string for a datasource
// variable and an object with the query for a query variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	Datasource *DatasourceRef  `json:"datasource"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
}

// LoadDashboard reads and decodes a dashboard JSON file.
func LoadDashboard(path string) (Dashboard, error) {
	var d Dashboard
	data, err := os.ReadFile(path)
	if err != nil {
		return d, fmt.Errorf("read dashboard: %w", err)
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("decode dashboard %s: %w", path, err)
	}
	if err := json.Unmarshal(data, &d.Raw); err != nil {
		return d, fmt.Errorf("decode dashboard %s: %w", path, err)
	}
	return d, nil
}

// AllPanels lists the dashboard's panels, those nested in rows included.
func (d Dashboard) AllPanels() []Panel {
	var all []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return all
}

// Expressions lists every PromQL expression of the dashboard: the panels'
// queries and the selectors inside label_values() of its variables.
func (d Dashboard) Expressions() ([]string, error) {
	var exprs []string
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			exprs = append(exprs, t.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		sel, _, err := LabelValues(v.Definition)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", v.Name, err)
		}
		exprs = append(exprs, sel)
	}
	return exprs, nil
}
