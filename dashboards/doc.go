// Package dashboards holds the Grafana dashboards generated from mixin/.
// Its Go test lints them: variables, units, descriptions, stable uids,
// nothing tied to one environment, and PromQL that only queries metrics of
// the metrics table of docs/operations.md or the mixin's recording rules.
package dashboards
