// Package dashboards holds the Grafana dashboards generated from mixin/.
// Its Go test lints them: variables, units, descriptions, stable uids,
// nothing tied to one environment, and PromQL that only queries metrics of
// SPEC section 9 or the mixin's recording rules.
package dashboards
