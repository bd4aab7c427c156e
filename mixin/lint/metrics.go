package lint

import (
	"strings"

	"github.com/prometheus/common/model"
)

// Metric is one documented metric family. OnlyWith, when not empty, says
// what probegate exports it only with: a probegate without that, the demo
// included, does not expose it.
type Metric struct {
	Name      string
	Histogram bool
	OnlyWith  string
}

// DocumentedMetrics lists every metric family docs/operations.md documents,
// the names the rules and dashboards may query besides the mixin's own
// recording rules.
func DocumentedMetrics() []Metric {
	return []Metric{
		{Name: "probegate_probes_total"},
		{Name: "probegate_probe_failures_total"},
		{Name: "probegate_probe_refusals_total"},
		{Name: "probegate_probe_duration_seconds", Histogram: true},
		{Name: "probegate_backend_state"},
		{Name: "probegate_backend_in_service"},
		{Name: "probegate_backend_reachable"},
		{Name: "probegate_backend_probe_verified"},
		{Name: "probegate_backend_transitions_total"},
		{Name: "probegate_backend_last_probe_status_code"},
		{Name: "probegate_backend_last_probe_timestamp_seconds"},
		{Name: "probegate_backend_last_transition_timestamp_seconds"},
		{Name: "probegate_backend_info"},
		{Name: "probegate_backend_probe_duration_seconds", Histogram: true},
		{Name: "probegate_backend_last_probe_duration_seconds"},
		{Name: "probegate_backend_tls_cert_expiry_timestamp_seconds"},
		{Name: "probegate_backends"},
		{Name: "probegate_backends_configured"},
		{Name: "probegate_backends_in_service"},
		{Name: "probegate_pool_fail_open"},
		{Name: "probegate_readiness_desired_healthy"},
		{Name: "probegate_readiness_disruptions_allowed"},
		{Name: "probegate_group_in_service", OnlyWith: "backends[].group and fanout.enabled"},
		{Name: "probegate_group_replicas", OnlyWith: "backends[].group and fanout.enabled"},
		{Name: "probegate_fanout_requests_total"},
		{Name: "probegate_fanout_partial_total"},
		{Name: "probegate_fanout_failed_total"},
		{Name: "probegate_fanout_backend_errors_total"},
		{Name: "probegate_fanout_rejected_total"},
		{Name: "probegate_fanout_duration_seconds", Histogram: true},
		{Name: "probegate_passive_ejections_total", OnlyWith: "passive_health.enabled"},
		{Name: "probegate_fanout_partial_maintenance_total"},
		{Name: "probegate_fanout_quorum_failures_total"},
		{Name: "probegate_fanout_correlated_failures_total"},
		{Name: "probegate_fanout_backend_duration_seconds", Histogram: true},
		{Name: "probegate_fanout_partial_stragglers_total"},
		{Name: "probegate_fanout_stragglers_total", OnlyWith: "fanout.stragglers.enabled"},
		{Name: "probegate_fanout_hedges_total", OnlyWith: "fanout.hedge.enabled and replica groups"},
		{Name: "probegate_fanout_hedges_refused_total", OnlyWith: "fanout.hedge.enabled"},
		{Name: "probegate_fanout_failovers_total", OnlyWith: "replica groups"},
		{Name: "probegate_outlier_ejections_total"},
		{Name: "probegate_outlier_ejections_suppressed_total"},
		{Name: "probegate_backend_outlier_ejected"},
		{Name: "probegate_maintenance_refusals_total"},
		{Name: "probegate_maintenance_store_up"},
		{Name: "probegate_maintenance_store_operations_total"},
		{Name: "probegate_maintenance_store_conflicts_total"},
		{Name: "probegate_replicas", OnlyWith: "maintenance.store: etcd"},
		{Name: "probegate_readiness_peer_override", OnlyWith: "maintenance.store: etcd"},
		{Name: "probegate_probing_mode", OnlyWith: "probing.shared.enabled"},
		{Name: "probegate_shared_assigned_backends", OnlyWith: "probing.shared.enabled"},
		{Name: "probegate_vantage_disagreements_total", OnlyWith: "probing.shared.enabled"},
		{Name: "probegate_vantage_dissents", OnlyWith: "probing.shared.enabled"},
		{Name: "probegate_shared_verdict_writes_total", OnlyWith: "probing.shared.enabled"},
		{Name: "probegate_shared_verdict_written_bytes_total", OnlyWith: "probing.shared.enabled"},
		{Name: "probegate_shared_verdicts_malformed_total", OnlyWith: "probing.shared.enabled"},
		{Name: "probegate_gate_ready"},
		{Name: "probegate_gate_draining"},
		{Name: "probegate_gate_check_success"},
		{Name: "probegate_config_last_reload_successful"},
		{Name: "probegate_config_last_reload_success_timestamp_seconds"},
		{Name: "probegate_build_info"},
		{Name: "probegate_discovered_backends"},
		{Name: "probegate_discovery_name_clashes_total"},
		{Name: "probegate_discovery_dropped_targets_total"},
	}
}

// histogramSuffixes are the series names a histogram family exposes.
var histogramSuffixes = []string{"_bucket", "_sum", "_count"}

// DocumentedSeriesName reports whether name is a series name the documentation
// promises: a family's name, or for a histogram one of its _bucket, _sum and
// _count series.
func DocumentedSeriesName(name string) bool {
	for _, m := range DocumentedMetrics() {
		if !m.Histogram {
			if name == m.Name {
				return true
			}
			continue
		}
		for _, suffix := range histogramSuffixes {
			if name == m.Name+suffix {
				return true
			}
		}
	}
	return false
}

// IsRecordingRuleName reports whether name has the level:metric:operations
// shape the Prometheus documentation recommends for recording rules.
func IsRecordingRuleName(name string) bool {
	parts := strings.Split(name, ":")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if !model.LegacyValidation.IsValidLabelName(p) {
			return false
		}
	}
	return true
}
