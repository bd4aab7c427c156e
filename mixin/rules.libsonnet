// Recording rules, named level:metric:operations and aggregated with
// `without` as https://prometheus.io/docs/practices/rules/ recommends: the
// level lists the labels that remain besides the target's own (job,
// instance), the metric keeps its name without _total, and the operations
// read newest first. The dashboards query them, and they serve fleet-wide
// views and federation; the alerts do not depend on them, so the alert
// file works on its own.
//
// A ratio divides only by a denominator above zero: with no probes or no
// fan-out traffic it has no sample rather than NaN.
{
  local config = self._config,
  local vars = { sel: config.probegateSelector },

  prometheusRules+:: {
    groups+: [
      {
        name: 'probegate.rules',
        rules: [
          {
            record: 'instance_backend:probegate_probes:rate5m',
            expr: 'rate(probegate_probes_total{%(sel)s}[5m])\n' % vars,
          },
          {
            record: 'instance_backend:probegate_probe_failures:rate5m',
            expr: |||
              sum without (reason) (
                rate(probegate_probe_failures_total{%(sel)s}[5m])
              )
            ||| % vars,
          },
          {
            record: 'instance_backend_reason:probegate_probe_failures:rate5m',
            expr: 'rate(probegate_probe_failures_total{%(sel)s}[5m])\n' % vars,
          },
          {
            record: 'instance_backend:probegate_probe_refusals:rate5m',
            expr: 'rate(probegate_probe_refusals_total{%(sel)s}[5m])\n' % vars,
          },
          {
            record: 'instance_backend:probegate_probe_failures_per_probes:ratio_rate5m',
            expr: |||
              instance_backend:probegate_probe_failures:rate5m{%(sel)s}
                /
              (instance_backend:probegate_probes:rate5m{%(sel)s} > 0)
            ||| % vars,
          },
          {
            record: 'instance_class:probegate_probe_duration_seconds_count:rate5m',
            expr: 'rate(probegate_probe_duration_seconds_count{%(sel)s}[5m])\n' % vars,
          },
          {
            record: 'instance_class:probegate_probe_duration_seconds_sum:rate5m',
            expr: 'rate(probegate_probe_duration_seconds_sum{%(sel)s}[5m])\n' % vars,
          },
          {
            record: 'instance_class:probegate_probe_duration_seconds:mean5m',
            expr: |||
              instance_class:probegate_probe_duration_seconds_sum:rate5m{%(sel)s}
                /
              (instance_class:probegate_probe_duration_seconds_count:rate5m{%(sel)s} > 0)
            ||| % vars,
          },
          {
            record: 'instance:probegate_fanout_requests:rate5m',
            expr: 'rate(probegate_fanout_requests_total{%(sel)s}[5m])\n' % vars,
          },
          {
            record: 'instance:probegate_fanout_partial:rate5m',
            expr: 'rate(probegate_fanout_partial_total{%(sel)s}[5m])\n' % vars,
          },
          {
            record: 'instance:probegate_fanout_failed:rate5m',
            expr: 'rate(probegate_fanout_failed_total{%(sel)s}[5m])\n' % vars,
          },
          {
            record: 'instance:probegate_fanout_partial_per_requests:ratio_rate5m',
            expr: |||
              instance:probegate_fanout_partial:rate5m{%(sel)s}
                /
              (instance:probegate_fanout_requests:rate5m{%(sel)s} > 0)
            ||| % vars,
          },
          {
            record: 'instance:probegate_fanout_failed_per_requests:ratio_rate5m',
            expr: |||
              instance:probegate_fanout_failed:rate5m{%(sel)s}
                /
              (instance:probegate_fanout_requests:rate5m{%(sel)s} > 0)
            ||| % vars,
          },
          {
            // Bucket rates of the fan-out latency, for histogram_quantile.
            record: 'instance_le:probegate_fanout_duration_seconds_bucket:rate5m',
            expr: 'rate(probegate_fanout_duration_seconds_bucket{%(sel)s}[5m])\n' % vars,
          },
          {
            record: 'instance_backend_reason:probegate_fanout_backend_errors:rate5m',
            expr: 'rate(probegate_fanout_backend_errors_total{%(sel)s}[5m])\n' % vars,
          },
          {
            // The share of a backend's fan-out rounds that cut it as a
            // straggler; a straggler's cut is one of its rounds' durations.
            record: 'instance_backend:probegate_fanout_stragglers_per_rounds:ratio_rate5m',
            expr: |||
              rate(probegate_fanout_stragglers_total{%(sel)s}[5m])
                /
              (rate(probegate_fanout_backend_duration_seconds_count{%(sel)s}[5m]) > 0)
            ||| % vars,
          },
          {
            // How many backends of the whole job are in each state, summed
            // over its instances: the fleet view of the state set.
            record: 'job_state:probegate_backend_state:sum',
            expr: |||
              sum without (instance, backend) (
                probegate_backend_state{%(sel)s}
              )
            ||| % vars,
          },
          {
            record: 'job:probegate_backends_in_service:sum',
            expr: 'sum without (instance) (probegate_backends_in_service{%(sel)s})\n' % vars,
          },
          {
            record: 'job:probegate_backends_configured:sum',
            expr: 'sum without (instance) (probegate_backends_configured{%(sel)s})\n' % vars,
          },
        ],
      },
    ],
  },
}
