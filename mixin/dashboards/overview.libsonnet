// "probegate / Overview": the pool, the gate and the prober of the selected
// instances.
local lib = import 'lib.libsonnet';

{
  local config = self._config,
  // sel narrows every query to the mixin's selector (and the chosen
  // cluster, with showMultiCluster) and to the job and
  // instances chosen above the dashboard.
  local base = lib.selector(config),
  local sel = base + ', job=~"$job", instance=~"$instance"',
  local v = { sel: sel },

  grafanaDashboards+:: {
    'probegate-overview.json': lib.dashboard(
      config,
      'overview',
      'Overview',
      [
        lib.queryVariable('job', 'label_values(probegate_build_info{%s}, job)' % base),
        lib.queryVariable('instance', 'label_values(probegate_build_info{%s, job=~"$job"}, instance)' % base, multi=true, allValue='.+'),
      ],
      lib.layout([
        lib.row(4, [
          lib.stat(
            'Backends configured',
            'Backends in the pools of the selected instances, static and discovered (probegate_backends_configured), summed.',
            'short',
            [lib.target('sum(probegate_backends_configured{%(sel)s})' % v, 'configured')],
          ),
          lib.stat(
            'Backends in service',
            'Backends in service, in every state but unhealthy and maintenance (probegate_backends_in_service), summed over the selected instances.',
            'short',
            [lib.target('sum(probegate_backends_in_service{%(sel)s})' % v, 'in service')],
          ),
          lib.stat(
            'Unverified backends',
            'Backends in service whose probe path refuses (state probe_unsupported): they have no health signal. Zero is what you want.',
            'short',
            [lib.target('sum(probegate_backend_state{%(sel)s, state="probe_unsupported"})' % v, 'probe_unsupported')],
          ) + lib.thresholdColors('green', [[1, 'orange']]),
          lib.stat(
            'In maintenance',
            'Backends an operator took out of service for maintenance (state maintenance), summed over the selected instances; probegate maintenance list says why and until when.',
            'short',
            [lib.target('sum(probegate_backend_state{%(sel)s, state="maintenance"})' % v, 'maintenance')],
          ) + lib.thresholdColors('green', [[1, 'blue']]),
          lib.stat(
            'Failing open',
            'Selected instances whose pool fails open right now (probegate_pool_fail_open): they send traffic to every configured backend, unhealthy ones included.',
            'short',
            [lib.target('sum(probegate_pool_fail_open{%(sel)s})' % v, 'fail-open')],
          ) + lib.thresholdColors('green', [[1, 'red']]),
          lib.stat(
            'Not ready',
            'Selected instances answering /ready with 503 (probegate_gate_ready is 0), draining ones included.',
            'short',
            [lib.target('count(probegate_gate_ready{%(sel)s} == 0) or vector(0)' % v, 'not ready')],
          ) + lib.thresholdColors('green', [[1, 'red']]),
          lib.stat(
            'Config reload',
            'Whether the last configuration reload of every selected instance succeeded (probegate_config_last_reload_successful, the minimum over instances).',
            'bool_yes_no',
            [lib.target('min(probegate_config_last_reload_successful{%(sel)s})' % v, 'reload ok')],
          ) + lib.thresholdColors('red', [[1, 'green']]),
        ]),
        lib.row(8, [
          lib.timeseries(
            'Backends by state',
            'How many backends are in each state of the state machine (probegate_backend_state), stacked. Every state but unhealthy and maintenance is in service; probe_unsupported is in service without a health signal.',
            'short',
            [lib.target('sum by (state) (probegate_backend_state{%(sel)s})' % v, '{{state}}')],
            stack=true,
            min=0,
          ) + lib.byNameColors(lib.stateColors),
          lib.timeseries(
            'In service vs configured',
            'Backends in service (probegate_backends_in_service) against backends configured (probegate_backends_configured), per instance.',
            'short',
            [
              lib.target('probegate_backends_in_service{%(sel)s}' % v, '{{instance}} in service'),
              lib.target('probegate_backends_configured{%(sel)s}' % v, '{{instance}} configured'),
            ],
            min=0,
          ),
        ]),
        lib.row(6, [
          lib.stateTimeline(
            'Fail-open',
            'When each instance failed open (probegate_pool_fail_open): too few backends in service, so every configured backend was selected.',
            'bool_yes_no',
            [lib.target('probegate_pool_fail_open{%(sel)s}' % v, '{{instance}}')],
          ) + lib.thresholdColors('green', [[1, 'red']]),
          lib.stateTimeline(
            'Readiness and draining',
            'Whether each instance answered /ready with 200 (probegate_gate_ready) and whether it was draining after a stop signal (probegate_gate_draining).',
            'bool_yes_no',
            [
              lib.target('probegate_gate_ready{%(sel)s}' % v, '{{instance}} ready'),
              lib.target('probegate_gate_draining{%(sel)s}' % v, '{{instance}} draining'),
            ],
          ) + lib.thresholdColors('red', [[1, 'green']]) + {
            // Draining is deliberate: shown, but not as an error.
            fieldConfig+: {
              overrides+: [{
                matcher: { id: 'byRegexp', options: '.* draining' },
                properties: [{
                  id: 'thresholds',
                  value: { mode: 'absolute', steps: [{ color: 'transparent', value: null }, { color: 'blue', value: 1 }] },
                }],
              }],
            },
          },
        ]),
        lib.row(6, [
          lib.stateTimeline(
            'Maintenance store',
            'Whether the last operation of each instance on its maintenance store succeeded (probegate_maintenance_store_up). While it is 0 the instance refuses to start or end maintenance and shows the entries it last read.',
            'bool_yes_no',
            [lib.target('probegate_maintenance_store_up{%(sel)s}' % v, '{{instance}}')],
          ) + lib.thresholdColors('red', [[1, 'green']]),
          lib.timeseries(
            'Live replicas by state',
            'The replicas sharing the maintenance store as each instance sees them (probegate_replicas, itself included), by state: ready, unready, draining. Replicas that disagree on the count do not all reach the store. Empty without the etcd store.',
            'short',
            [lib.target('probegate_replicas{%(sel)s}' % v, '{{instance}} sees {{state}}')],
            min=0,
          ),
          lib.stateTimeline(
            'Ready by peer override',
            'When each instance stayed ready although its readiness budget did not hold, because no live replica\'s budget held either (probegate_readiness_peer_override, readiness.peer_relative): the backends were down for every replica. Empty without the etcd store.',
            'bool_yes_no',
            [lib.target('probegate_readiness_peer_override{%(sel)s}' % v, '{{instance}}')],
          ) + lib.thresholdColors('green', [[1, 'orange']]),
        ]),
        lib.row(6, [
          lib.stateTimeline(
            'Probing locally',
            'When each instance, with shared probing on, probed every backend itself instead of its share (probegate_probing_mode{mode="local"} is 1): its store was unsynced for longer than the view lease, or it saw no live peer (ProbegateLocalProbing). Empty with probing.shared off.',
            'bool_yes_no',
            [lib.target('probegate_probing_mode{%(sel)s, mode="local"}' % v, '{{instance}}')],
          ) + lib.thresholdColors('green', [[1, 'orange']]),
          lib.timeseries(
            'Backends each replica probes',
            'The backends each instance probes itself with shared probing on (probegate_shared_assigned_backends): its share, as a vantage point, in shared mode, and every backend configured (probegate_backends_configured) in local mode. Empty with probing.shared off.',
            'short',
            [
              lib.target('probegate_shared_assigned_backends{%(sel)s}' % v, '{{instance}} probes'),
              lib.target('probegate_backends_configured{%(sel)s} and probegate_shared_assigned_backends{%(sel)s}' % v, '{{instance}} configured'),
            ],
            min=0,
          ),
          lib.timeseries(
            'Vantage point disagreements',
            'Per dissenting replica (the replica label), the backends on which it disagrees alone with the other vantage points right now (probegate_vantage_dissents, the most any selected instance counts: ProbegateVantageDisagreement), and the disagreements newly counted (probegate_vantage_disagreements_total). A lone dissenter ejects nothing: its path to those backends is most likely broken. Empty with probing.shared off.',
            'short',
            [
              lib.target('max by (replica) (probegate_vantage_dissents{%(sel)s})' % v, '{{replica}} dissents on'),
              lib.target('max by (replica) (increase(probegate_vantage_disagreements_total{%(sel)s}[$__rate_interval]))' % v, '{{replica}} new disagreements'),
            ],
            min=0,
          ),
        ]),
        lib.row(8, [
          lib.timeseries(
            'Readiness budget',
            'The readiness budget per instance: backends in service (current healthy), the desired healthy count from readiness.min_available or max_unavailable, and the disruptions that leaves (probegate_readiness_disruptions_allowed). /ready fails when in service drops below desired.',
            'short',
            [
              lib.target('probegate_backends_in_service{%(sel)s}' % v, '{{instance}} in service'),
              lib.target('probegate_readiness_desired_healthy{%(sel)s}' % v, '{{instance}} desired healthy'),
              lib.target('probegate_readiness_disruptions_allowed{%(sel)s}' % v, '{{instance}} disruptions allowed'),
            ],
            min=0,
          ),
          lib.timeseries(
            'Partial fan-out ratio',
            'The share of fan-out requests over 5m answered by fewer backends than configured, and the share answered by none (the recording rules instance:probegate_fanout_partial_per_requests:ratio_rate5m and instance:probegate_fanout_failed_per_requests:ratio_rate5m), per instance. Empty, not NaN, while an instance gets no fan-out traffic.',
            'percentunit',
            [
              lib.target('instance:probegate_fanout_partial_per_requests:ratio_rate5m{%(sel)s}' % v, '{{instance}} partial'),
              lib.target('instance:probegate_fanout_failed_per_requests:ratio_rate5m{%(sel)s}' % v, '{{instance}} failed'),
            ],
            min=0,
          ),
        ]),
        lib.row(8, [
          lib.timeseries(
            'Replica groups in service',
            'Replicas in service of each replica group (probegate_group_in_service), as each instance sees them, and the fewest of any group of two replicas or more across the selected instances: 0 is a group missing from every fan-out answer (ProbegateGroupDown), 1 a group on its last replica (ProbegateGroupAtRisk). Empty while no backend has a group or the fan-out is off.',
            'short',
            [
              lib.target('probegate_group_in_service{%(sel)s}' % v, '{{instance}} {{group}}'),
              lib.target('min(probegate_group_in_service{%(sel)s} and probegate_group_replicas{%(sel)s} >= 2)' % v, 'fewest in service'),
            ],
            min=0,
          ),
        ]),
        lib.row(8, [
          lib.timeseries(
            'Fan-out requests',
            'Fan-out rounds per second over 5m per instance (instance:probegate_fanout_requests:rate5m), and of those the partial ones, answered by fewer backends than configured (instance:probegate_fanout_partial:rate5m), the failed ones, answered by none (instance:probegate_fanout_failed:rate5m), and the partial ones only because stragglers were cut, by design (probegate_fanout_partial_stragglers_total; with fanout.stragglers on).',
            'reqps',
            [
              lib.target('instance:probegate_fanout_requests:rate5m{%(sel)s}' % v, '{{instance}} requests'),
              lib.target('instance:probegate_fanout_partial:rate5m{%(sel)s}' % v, '{{instance}} partial'),
              lib.target('instance:probegate_fanout_failed:rate5m{%(sel)s}' % v, '{{instance}} failed'),
              lib.target('rate(probegate_fanout_partial_stragglers_total{%(sel)s}[$__rate_interval])' % v, '{{instance}} partial by stragglers'),
            ],
            min=0,
          ),
          lib.timeseries(
            'Fan-out latency',
            'Fan-out round duration quantiles over 5m (probegate_fanout_duration_seconds, from the recording rule instance_le:probegate_fanout_duration_seconds_bucket:rate5m): the median and the 99th percentile over the selected instances.',
            's',
            [
              lib.target('histogram_quantile(0.5, sum by (le) (instance_le:probegate_fanout_duration_seconds_bucket:rate5m{%(sel)s}))' % v, 'p50'),
              lib.target('histogram_quantile(0.99, sum by (le) (instance_le:probegate_fanout_duration_seconds_bucket:rate5m{%(sel)s}))' % v, 'p99'),
            ],
            min=0,
          ),
          lib.timeseries(
            'Fan-out latency by backend',
            'The 90th percentile of each backend\'s part in fan-out rounds (probegate_fanout_backend_duration_seconds), the latency outlier detection compares: one line far above the others is an outlier.',
            's',
            [lib.target('histogram_quantile(0.9, sum by (instance, backend, le) (rate(probegate_fanout_backend_duration_seconds_bucket{%(sel)s}[$__rate_interval])))' % v, '{{instance}} {{backend}}')],
            min=0,
          ),
          lib.timeseries(
            'Outlier ejections',
            'Ejections by outlier detection per instance and reason (probegate_outlier_ejections_total, enforced ones), and those the readiness budget held back (probegate_outlier_ejections_suppressed_total).',
            'short',
            [
              lib.target('sum by (instance, reason) (increase(probegate_outlier_ejections_total{%(sel)s, enforced="true"}[$__rate_interval]))' % v, '{{instance}} {{reason}}'),
              lib.target('sum by (instance, reason) (increase(probegate_outlier_ejections_suppressed_total{%(sel)s}[$__rate_interval]))' % v, '{{instance}} {{reason}} suppressed'),
            ],
            stack=true,
            min=0,
          ),
        ]),
        lib.row(8, [
          lib.timeseries(
            'Fan-out backend errors by reason',
            'Backend answers per second over 5m that did not contribute to a fan-out round, by reason (instance_backend_reason:probegate_fanout_backend_errors:rate5m, summed over backends). The reason local counts rounds probegate refused or lost itself, not backend faults.',
            'ops',
            [lib.target('sum by (reason) (instance_backend_reason:probegate_fanout_backend_errors:rate5m{%(sel)s})' % v, '{{reason}}')],
            stack=true,
            min=0,
          ),
          lib.timeseries(
            'Stragglers cut by backend',
            'The share of each backend\'s fan-out rounds over 5m that answered without it because its peers had answered long before (instance_backend:probegate_fanout_stragglers_per_rounds:ratio_rate5m; with fanout.stragglers on), the share ProbegateBackendStraggling alerts on. Empty while stragglers are not cut.',
            'percentunit',
            [lib.target('instance_backend:probegate_fanout_stragglers_per_rounds:ratio_rate5m{%(sel)s}' % v, '{{instance}} {{backend}}')],
            min=0,
          ),
          lib.timeseries(
            'Hedges and failovers by group',
            'Per replica group, hedges per second sent to a sibling of a late replica, won when the hedge answered first (probegate_fanout_hedges_total; with fanout.hedge on), the hedges the token bucket refused past fanout.hedge.max_percent (probegate_fanout_hedges_refused_total), and failovers to a sibling after a replica failed (probegate_fanout_failovers_total). Empty without replica groups.',
            'ops',
            [
              lib.target('sum by (instance, group, outcome) (rate(probegate_fanout_hedges_total{%(sel)s}[$__rate_interval]))' % v, '{{instance}} {{group}} hedges {{outcome}}'),
              lib.target('sum by (instance) (rate(probegate_fanout_hedges_refused_total{%(sel)s}[$__rate_interval]))' % v, '{{instance}} hedges refused'),
              lib.target('sum by (instance, group) (rate(probegate_fanout_failovers_total{%(sel)s}[$__rate_interval]))' % v, '{{instance}} {{group}} failovers'),
            ],
            min=0,
          ),
        ]),
        lib.row(8, [
          lib.timeseries(
            'Probe results by class',
            'Probes per second over 5m by class (instance_class:probegate_probe_duration_seconds_count:rate5m): ok (200-399), refused (4xx but 429, and 501: the probe path is refused) and failed (429, 5xx, timeouts and transport errors).',
            'ops',
            [lib.target('sum by (class) (instance_class:probegate_probe_duration_seconds_count:rate5m{%(sel)s})' % v, '{{class}}')],
            stack=true,
            min=0,
          ) + lib.byNameColors({ ok: 'green', refused: 'orange', failed: 'red' }),
          lib.timeseries(
            'Probe failures and refusals by reason',
            'Failed probes per second over 5m by reason (instance_backend_reason:probegate_probe_failures:rate5m: timeout, transport, http_5xx, http_429, body_mismatch, grpc_not_serving, and local: probegate short of descriptors, ports or memory, which judges no backend) and refused probes (instance_backend:probegate_probe_refusals:rate5m).',
            'ops',
            [
              lib.target('sum by (reason) (instance_backend_reason:probegate_probe_failures:rate5m{%(sel)s})' % v, '{{reason}}'),
              lib.target('sum(instance_backend:probegate_probe_refusals:rate5m{%(sel)s})' % v, 'refused'),
            ],
            stack=true,
            min=0,
          ),
        ]),
        lib.row(8, [
          lib.timeseries(
            'Probe latency',
            'Probe duration quantiles by class (probegate_probe_duration_seconds): the median and the 99th percentile, and the mean over 5m per instance (instance_class:probegate_probe_duration_seconds:mean5m).',
            's',
            [
              lib.target('histogram_quantile(0.5, sum by (class, le) (rate(probegate_probe_duration_seconds_bucket{%(sel)s}[$__rate_interval])))' % v, 'p50 {{class}}'),
              lib.target('histogram_quantile(0.99, sum by (class, le) (rate(probegate_probe_duration_seconds_bucket{%(sel)s}[$__rate_interval])))' % v, 'p99 {{class}}'),
              lib.target('instance_class:probegate_probe_duration_seconds:mean5m{%(sel)s}' % v, 'mean {{instance}} {{class}}'),
            ],
            min=0,
          ),
          lib.table(
            'Backends',
            'Every backend of the selected instances with its current state, url and probe path (probegate_backend_state joined with probegate_backend_info). Open probegate / Backend for one backend\'s history.',
            'none',
            [lib.target(|||
              (probegate_backend_state{%(sel)s} == 1)
              * ignoring (state, url, probe_path) group_left (url, probe_path)
              probegate_backend_info{%(sel)s}
            ||| % v, '', instant=true) { format: 'table' }],
          ) + {
            transformations: [{
              id: 'organize',
              options: {
                excludeByName: { Time: true, Value: true, __name__: true, job: true },
                indexByName: { instance: 0, backend: 1, state: 2, url: 3, probe_path: 4 },
              },
            }],
          },
        ]),
      ]),
    ),
  },
}
