// Package lint reads the rule files and dashboards the monitoring mixin
// generates and reports what their PromQL queries: every vector selector
// with its matchers, every range and every aggregation. It parses with
// Prometheus's own parser, so an expression Prometheus would reject is an
// error here too, and it stands in for the Grafana variables a dashboard
// uses where PromQL wants a duration. It also lists the metric names the
// documentation promises, which is what tells a typo in a metric name from
// a metric that exists.
package lint
