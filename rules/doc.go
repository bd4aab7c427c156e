// Package rules holds the Prometheus rule files generated from mixin/
// (probegate-alerts.yaml, probegate-rules.yaml) and their promtool tests in
// tests/. Its Go test checks the conventions promtool does not: alert and
// recording rule naming, annotations, selectors, and that every alert has a
// case that fires and one that must not.
package rules
