package lint

import (
	"fmt"
	"regexp"
	"strings"
)

// Matcher is one label matcher of a selector, such as job=~"$job". Value
// keeps its quotes.
type Matcher struct {
	Label, Op, Value string
}

// String renders the matcher as PromQL.
func (m Matcher) String() string { return m.Label + m.Op + m.Value }

// Selector is one vector selector: a metric name and its matchers.
type Selector struct {
	Metric   string
	Matchers []Matcher
}

// Has reports whether the selector has exactly the matcher label op value,
// value given with its quotes.
func (s Selector) Has(label, op, value string) bool {
	for _, m := range s.Matchers {
		if m.Label == label && m.Op == op && m.Value == value {
			return true
		}
	}
	return false
}

// Aggregation is one aggregation operator and whether it names the labels
// it keeps or drops (by or without).
type Aggregation struct {
	Op      string
	Grouped bool
}

// Expr is what Parse saw in an expression.
type Expr struct {
	Selectors    []Selector
	Ranges       []string // the text inside every [...]
	Aggregations []Aggregation
	Functions    []string
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

var aggregations = setOf("sum", "min", "max", "avg", "group", "stddev", "stdvar",
	"count", "count_values", "bottomk", "topk", "quantile")

var functions = setOf("abs", "absent", "absent_over_time", "ceil", "changes", "clamp",
	"clamp_max", "clamp_min", "day_of_month", "day_of_week", "day_of_year", "days_in_month",
	"delta", "deriv", "exp", "floor", "histogram_quantile", "holt_winters", "hour", "idelta",
	"increase", "irate", "label_join", "label_replace", "ln", "log2", "log10", "minute",
	"month", "predict_linear", "rate", "resets", "round", "scalar", "sgn", "sort",
	"sort_desc", "sqrt", "time", "timestamp", "vector", "year", "avg_over_time",
	"min_over_time", "max_over_time", "sum_over_time", "count_over_time",
	"quantile_over_time", "stddev_over_time", "stdvar_over_time", "last_over_time",
	"present_over_time")

var binaryKeywords = setOf("and", "or", "unless")

var binaryOperators = setOf("+", "-", "*", "/", "%", "^", "==", "!=", ">", "<", ">=", "<=")

var matchOperators = setOf("=", "!=", "=~", "!~")

// rangePattern accepts a duration, a Grafana interval variable, or a
// subquery of them.
var rangePattern = regexp.MustCompile(`^(\d+(ms|s|m|h|d|w|y))+$|^\$\w+$|^\$\{\w+\}$`)

var labelPattern = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

func setOf(names ...string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

// Parse checks that expr has the shape of PromQL and reports what it holds.
// It does not know operator precedence or types: it is a shape check, not
// an evaluator.
func Parse(expr string) (Expr, error) {
	toks, err := lex(expr)
	if err != nil {
		return Expr{}, err
	}
	p := &parser{toks: toks}
	if err := p.expr(); err != nil {
		return Expr{}, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return Expr{}, fmt.Errorf("unexpected %q at offset %d", t.text, t.pos)
	}
	return p.out, nil
}

type parser struct {
	toks []token
	i    int
	out  Expr
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) expect(text string) error {
	if t := p.next(); t.kind != tokPunct || t.text != text {
		return fmt.Errorf("expected %q at offset %d, got %q", text, t.pos, t.text)
	}
	return nil
}

func (p *parser) isPunct(text string) bool {
	t := p.peek()
	return t.kind == tokPunct && t.text == text
}

// expr := unary { binop modifiers unary }
func (p *parser) expr() error {
	if err := p.unary(); err != nil {
		return err
	}
	for {
		t := p.peek()
		isOp := (t.kind == tokPunct && binaryOperators[t.text]) || (t.kind == tokIdent && binaryKeywords[t.text])
		if !isOp {
			return nil
		}
		p.next()
		if err := p.modifiers(); err != nil {
			return err
		}
		if err := p.unary(); err != nil {
			return err
		}
	}
}

// modifiers := [bool] [(on|ignoring) labels [(group_left|group_right) [labels]]]
func (p *parser) modifiers() error {
	if t := p.peek(); t.kind == tokIdent && t.text == "bool" {
		p.next()
	}
	if t := p.peek(); t.kind == tokIdent && (t.text == "on" || t.text == "ignoring") {
		p.next()
		if err := p.labelList(); err != nil {
			return err
		}
	}
	if t := p.peek(); t.kind == tokIdent && (t.text == "group_left" || t.text == "group_right") {
		p.next()
		if p.isPunct("(") {
			return p.labelList()
		}
	}
	return nil
}

// unary := [+|-] primary [range] [offset duration]
func (p *parser) unary() error {
	if p.isPunct("-") || p.isPunct("+") {
		p.next()
	}
	if err := p.primary(); err != nil {
		return err
	}
	if t := p.peek(); t.kind == tokRange {
		p.next()
		if err := checkRange(t); err != nil {
			return err
		}
		p.out.Ranges = append(p.out.Ranges, t.text)
	}
	if t := p.peek(); t.kind == tokIdent && t.text == "offset" {
		p.next()
		if d := p.next(); d.kind != tokNumber && d.kind != tokIdent {
			return fmt.Errorf("expected a duration after offset at offset %d", d.pos)
		}
	}
	return nil
}

func checkRange(t token) error {
	for _, part := range strings.SplitN(t.text, ":", 2) {
		if part == "" && strings.Contains(t.text, ":") {
			continue // a subquery's default step
		}
		if !rangePattern.MatchString(part) {
			return fmt.Errorf("bad range [%s] at offset %d", t.text, t.pos)
		}
	}
	return nil
}

func (p *parser) primary() error {
	t := p.next()
	switch {
	case t.kind == tokNumber, t.kind == tokString:
		return nil
	case t.kind == tokPunct && t.text == "(":
		if err := p.expr(); err != nil {
			return err
		}
		return p.expect(")")
	case t.kind == tokPunct && t.text == "{":
		return p.selector("", t)
	case t.kind == tokIdent && aggregations[t.text]:
		return p.aggregation(t.text)
	case t.kind == tokIdent && functions[t.text]:
		p.out.Functions = append(p.out.Functions, t.text)
		return p.args()
	case t.kind == tokIdent && (t.text == "Inf" || t.text == "NaN" || t.text == "inf" || t.text == "nan"):
		return nil
	case t.kind == tokIdent:
		if p.isPunct("(") {
			return fmt.Errorf("unknown function %q at offset %d", t.text, t.pos)
		}
		if binaryKeywords[t.text] || t.text == "by" || t.text == "without" || t.text == "offset" || t.text == "bool" {
			return fmt.Errorf("keyword %q where an expression belongs at offset %d", t.text, t.pos)
		}
		if p.isPunct("{") {
			return p.selector(t.text, p.next())
		}
		p.out.Selectors = append(p.out.Selectors, Selector{Metric: t.text})
		return nil
	default:
		return fmt.Errorf("unexpected %q at offset %d", t.text, t.pos)
	}
}

// aggregation := op [grouping] args [grouping]
func (p *parser) aggregation(op string) error {
	grouped := false
	if t := p.peek(); t.kind == tokIdent && (t.text == "by" || t.text == "without") {
		p.next()
		if err := p.labelList(); err != nil {
			return err
		}
		grouped = true
	}
	if err := p.args(); err != nil {
		return err
	}
	if t := p.peek(); !grouped && t.kind == tokIdent && (t.text == "by" || t.text == "without") {
		p.next()
		if err := p.labelList(); err != nil {
			return err
		}
		grouped = true
	}
	p.out.Aggregations = append(p.out.Aggregations, Aggregation{Op: op, Grouped: grouped})
	return nil
}

// args := ( [expr {, expr}] )
func (p *parser) args() error {
	if err := p.expect("("); err != nil {
		return err
	}
	if p.isPunct(")") {
		p.next()
		return nil
	}
	for {
		if err := p.expr(); err != nil {
			return err
		}
		if !p.isPunct(",") {
			return p.expect(")")
		}
		p.next()
	}
}

// labelList := ( [label {, label}] )
func (p *parser) labelList() error {
	if err := p.expect("("); err != nil {
		return err
	}
	for !p.isPunct(")") {
		t := p.next()
		if t.kind != tokIdent || !labelPattern.MatchString(t.text) {
			return fmt.Errorf("expected a label name at offset %d, got %q", t.pos, t.text)
		}
		if p.isPunct(",") {
			p.next()
		} else if !p.isPunct(")") {
			return fmt.Errorf("expected , or ) at offset %d", p.peek().pos)
		}
	}
	p.next()
	return nil
}

// selector reads the matchers after the opening brace open.
func (p *parser) selector(metric string, open token) error {
	if open.kind != tokPunct || open.text != "{" {
		return fmt.Errorf("expected { at offset %d", open.pos)
	}
	sel := Selector{Metric: metric}
	for !p.isPunct("}") {
		label, op, value := p.next(), p.next(), p.next()
		if label.kind != tokIdent || !labelPattern.MatchString(label.text) {
			return fmt.Errorf("expected a label name at offset %d, got %q", label.pos, label.text)
		}
		if op.kind != tokPunct || !matchOperators[op.text] {
			return fmt.Errorf("expected a match operator at offset %d, got %q", op.pos, op.text)
		}
		if value.kind != tokString {
			return fmt.Errorf("expected a quoted value at offset %d, got %q", value.pos, value.text)
		}
		sel.Matchers = append(sel.Matchers, Matcher{label.text, op.text, value.text})
		if p.isPunct(",") {
			p.next()
		} else if !p.isPunct("}") {
			return fmt.Errorf("expected , or } at offset %d", p.peek().pos)
		}
	}
	p.next()
	if sel.Metric == "" && len(sel.Matchers) == 0 {
		return fmt.Errorf("empty selector at offset %d", open.pos)
	}
	p.out.Selectors = append(p.out.Selectors, sel)
	return nil
}
