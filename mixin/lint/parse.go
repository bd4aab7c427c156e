package lint

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Matcher is one label matcher of a selector, such as job=~"$job". Op is
// one of =, !=, =~ and !~; Value is the value without its quotes.
type Matcher struct {
	Label, Op, Value string
}

// String renders the matcher as PromQL.
func (m Matcher) String() string {
	return (&labels.Matcher{Name: m.Label, Value: m.Value, Type: matchTypes[m.Op]}).String()
}

// matchTypes maps a matcher's operator to Prometheus's match type.
var matchTypes = map[string]labels.MatchType{
	labels.MatchEqual.String():     labels.MatchEqual,
	labels.MatchNotEqual.String():  labels.MatchNotEqual,
	labels.MatchRegexp.String():    labels.MatchRegexp,
	labels.MatchNotRegexp.String(): labels.MatchNotRegexp,
}

// Matches reports whether a series whose label is value is selected by the
// matcher, as Prometheus decides it (a regular expression is anchored at
// both ends). It fails on an unknown operator or a bad regular expression.
func (m Matcher) Matches(value string) (bool, error) {
	t, ok := matchTypes[m.Op]
	if !ok {
		return false, fmt.Errorf("matcher %s%s%q: unknown operator %q", m.Label, m.Op, m.Value, m.Op)
	}
	lm, err := labels.NewMatcher(t, m.Label, m.Value)
	if err != nil {
		return false, fmt.Errorf("matcher %s: %w", m, err)
	}
	return lm.Matches(value), nil
}

// Selector is one vector selector: a metric name, empty when the selector
// names none outside its braces, and its matchers.
type Selector struct {
	Metric   string
	Matchers []Matcher
}

// Has reports whether the selector has exactly the matcher label op value.
func (s Selector) Has(label, op, value string) bool {
	for _, m := range s.Matchers {
		if m.Label == label && m.Op == op && m.Value == value {
			return true
		}
	}
	return false
}

// Aggregation is one aggregation operator and whether it names the labels
// it keeps or drops (by or without). Without tells which, Labels are those
// named, and Outermost is true for the aggregation the whole expression is
// (parentheses around it aside).
type Aggregation struct {
	Op        string
	Grouped   bool
	Without   bool
	Labels    []string
	Outermost bool
}

// Expr is what Parse saw in an expression, each list in the order of a
// depth-first walk: left to right, an enclosing node before those inside.
type Expr struct {
	Selectors []Selector
	// Ranges holds every range, 5m for [5m] and 1h:5m for the subquery
	// [1h:5m]; a Grafana duration variable is given by its name.
	Ranges       []string
	Aggregations []Aggregation
}

// Metrics lists the metric names of the expression's selectors, in order,
// each once.
func (e Expr) Metrics() []string {
	var names []string
	seen := map[string]bool{}
	for _, s := range e.Selectors {
		if s.Metric != "" && !seen[s.Metric] {
			seen[s.Metric] = true
			names = append(names, s.Metric)
		}
	}
	return names
}

// Parse parses expr as Prometheus does, after standing in for the Grafana
// duration variables (see durationVariables), and reports what it holds.
// It fails on every expression Prometheus rejects, types included.
func Parse(expr string) (Expr, error) {
	root, err := parser.NewParser(parser.Options{}).ParseExpr(substituteVariables(expr))
	if err != nil {
		msg := restoreVariables(err.Error())
		if strings.Contains(msg, "'$'") {
			msg += "; outside a string a Grafana variable may only stand for a duration, and be one of " + durationVariableNames()
		}
		return Expr{}, errors.New(msg)
	}
	var out Expr
	parser.Inspect(root, func(node parser.Node, path []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			out.Selectors = append(out.Selectors, selector(n))
		case *parser.MatrixSelector:
			out.Ranges = append(out.Ranges, durationText(n.Range))
		case *parser.SubqueryExpr:
			step := ""
			if n.Step != 0 {
				step = durationText(n.Step)
			}
			out.Ranges = append(out.Ranges, durationText(n.Range)+":"+step)
		case *parser.AggregateExpr:
			out.Aggregations = append(out.Aggregations, Aggregation{
				Op:        n.Op.String(),
				Grouped:   n.Without || len(n.Grouping) > 0,
				Without:   n.Without,
				Labels:    n.Grouping,
				Outermost: onlyParens(path),
			})
		}
		return nil
	})
	return out, nil
}

// onlyParens reports whether every node of path is a parenthesis: a node
// under nothing else is the whole expression.
func onlyParens(path []parser.Node) bool {
	for _, n := range path {
		if _, ok := n.(*parser.ParenExpr); !ok {
			return false
		}
	}
	return true
}

// selector converts a parsed vector selector, leaving out the matcher the
// parser adds for a metric name written outside the braces.
func selector(vs *parser.VectorSelector) Selector {
	matchers := vs.LabelMatchers
	if vs.Name != "" {
		matchers = matchers[:len(matchers)-1]
	}
	s := Selector{Metric: vs.Name}
	for _, m := range matchers {
		s.Matchers = append(s.Matchers, Matcher{Label: m.Name, Op: m.Type.String(), Value: restoreVariables(m.Value)})
	}
	return s
}
