// Package lint checks the PromQL the monitoring mixin generates without
// depending on the Prometheus server module: a small parser that accepts the
// shape of PromQL (balanced brackets, terminated strings, known functions,
// label matchers, grouping clauses) and reports every vector selector, range
// and aggregation it saw, plus the list of metric names the documentation
// promises. promtool checks the rule files with the real parser; this
// package is what the dashboards get, and what tells a typo in a metric name
// from a metric that exists.
package lint
