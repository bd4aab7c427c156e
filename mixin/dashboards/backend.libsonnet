// "probegate / Backend": one backend of one instance, probe by probe.
local lib = import 'lib.libsonnet';

{
  local config = self._config,
  // sel narrows every query to the mixin's selector (and the chosen
  // cluster, with showMultiCluster) and to the job,
  // instance and backend chosen above the dashboard.
  local base = lib.selector(config),
  local sel = base + ', job=~"$job", instance=~"$instance", backend=~"$backend"',
  local v = { sel: sel },

  grafanaDashboards+:: {
    'probegate-backend.json': lib.dashboard(
      config,
      'backend',
      'Backend',
      [
        lib.queryVariable('job', 'label_values(probegate_build_info{%s}, job)' % base),
        lib.queryVariable('instance', 'label_values(probegate_build_info{%s, job=~"$job"}, instance)' % base),
        lib.queryVariable('backend', 'label_values(probegate_backend_info{%s, job=~"$job", instance=~"$instance"}, backend)' % base),
      ],
      lib.layout([
        lib.row(4, [
          lib.stat(
            'State',
            'The backend\'s state now (probegate_backend_state): unknown (not yet probed), healthy, unhealthy (out of service), probe_unsupported (in service, but its probe path refuses) or maintenance (taken out by an operator; its probes go on).',
            'none',
            [lib.target('probegate_backend_state{%(sel)s} == 1' % v, '{{state}}')],
            textMode='name',
          ) + lib.byNameColors(lib.stateColors) + { options+: { colorMode: 'background' } },
          lib.stat(
            'In service',
            'Whether the backend gets traffic (probegate_backend_in_service).',
            'bool_yes_no',
            [lib.target('probegate_backend_in_service{%(sel)s}' % v, 'in service')],
          ) + lib.thresholdColors('red', [[1, 'green']]),
          lib.stat(
            'Verified',
            'Whether a probe ever showed that the probe path tells health apart (probegate_backend_probe_verified): an ok answer or an answered failure latches it.',
            'bool_yes_no',
            [lib.target('probegate_backend_probe_verified{%(sel)s}' % v, 'verified')],
          ) + lib.thresholdColors('orange', [[1, 'green']]),
          lib.stat(
            'Reachable',
            'Whether the backend answers HTTP at all (probegate_backend_reachable): cleared after consecutive timeouts or transport errors, set by any HTTP answer.',
            'bool_yes_no',
            [lib.target('probegate_backend_reachable{%(sel)s}' % v, 'reachable')],
          ) + lib.thresholdColors('red', [[1, 'green']]),
          lib.stat(
            'Last status code',
            'The HTTP status of the last probe (probegate_backend_last_probe_status_code); 0 when it was not answered (timeout or transport error).',
            'none',
            [lib.target('probegate_backend_last_probe_status_code{%(sel)s}' % v, 'status')],
          ) + lib.thresholdColors('red', [[200, 'green'], [400, 'orange'], [429, 'red'], [430, 'orange'], [500, 'red']]),
          lib.stat(
            'Since last probe',
            'Time since the last probe finished (probegate_backend_last_probe_timestamp_seconds). Much more than the probe interval means the prober falls behind.',
            's',
            [lib.target('time() - probegate_backend_last_probe_timestamp_seconds{%(sel)s}' % v, 'age')],
          ),
        ]),
        lib.row(3, [
          lib.table(
            'Probe target',
            'The backend\'s url and probe path (probegate_backend_info).',
            'none',
            [lib.target('probegate_backend_info{%(sel)s}' % v, '', instant=true) { format: 'table' }],
          ) + {
            transformations: [{
              id: 'organize',
              options: {
                excludeByName: { Time: true, Value: true, __name__: true, job: true },
                indexByName: { instance: 0, backend: 1, url: 2, probe_path: 3 },
              },
            }],
          },
        ]),
        lib.row(6, [
          lib.stateTimeline(
            'State timeline',
            'The backend\'s state over time (probegate_backend_state), one row per state.',
            'none',
            [lib.target('max by (state) (probegate_backend_state{%(sel)s})' % v, '{{state}}')],
          ) + lib.oneHotRows(lib.stateColors),
        ]),
        lib.row(8, [
          lib.timeseries(
            'Probe results by reason',
            'Probes per second over 5m, from the recording rules: ok ones (instance_backend:probegate_probes:rate5m less failures and refusals), refusals (instance_backend:probegate_probe_refusals:rate5m) and failures by reason (instance_backend_reason:probegate_probe_failures:rate5m).',
            'ops',
            [
              lib.target(|||
                sum(instance_backend:probegate_probes:rate5m{%(sel)s})
                - sum(instance_backend:probegate_probe_failures:rate5m{%(sel)s})
                - sum(instance_backend:probegate_probe_refusals:rate5m{%(sel)s})
              ||| % v, 'ok'),
              lib.target('sum(instance_backend:probegate_probe_refusals:rate5m{%(sel)s})' % v, 'refused'),
              lib.target('sum by (reason) (instance_backend_reason:probegate_probe_failures:rate5m{%(sel)s})' % v, '{{reason}}'),
            ],
            stack=true,
            min=0,
          ) + lib.byNameColors({ ok: 'green', refused: 'orange' }),
          lib.timeseries(
            'Probe failure ratio',
            'The share of probes over 5m that failed (instance_backend:probegate_probe_failures_per_probes:ratio_rate5m; refusals are not failures). Empty, not NaN, while the backend is not probed.',
            'percentunit',
            [lib.target('instance_backend:probegate_probe_failures_per_probes:ratio_rate5m{%(sel)s}' % v, 'failed')],
            min=0,
          ),
          lib.timeseries(
            'Last probe status code',
            'The HTTP status of the last probe over time (probegate_backend_last_probe_status_code); 0 means the probe was not answered.',
            'none',
            [lib.target('probegate_backend_last_probe_status_code{%(sel)s}' % v, 'status')],
            min=0,
          ) + { fieldConfig+: { defaults+: { decimals: 0 } } },
        ]),
        lib.row(6, [
          lib.stateTimeline(
            'Verified, reachable and in service',
            'The verified latch (probegate_backend_probe_verified), reachability (probegate_backend_reachable) and whether the backend was in service (probegate_backend_in_service), over time.',
            'bool_yes_no',
            [
              lib.target('probegate_backend_probe_verified{%(sel)s}' % v, 'verified'),
              lib.target('probegate_backend_reachable{%(sel)s}' % v, 'reachable'),
              lib.target('probegate_backend_in_service{%(sel)s}' % v, 'in service'),
            ],
          ) + lib.thresholdColors('red', [[1, 'green']]),
        ]),
        lib.row(8, [
          lib.timeseries(
            'Transitions',
            'State changes by the state entered (probegate_backend_transitions_total). A steady stream of them means the backend flaps.',
            'short',
            [lib.target('sum by (to) (increase(probegate_backend_transitions_total{%(sel)s}[$__rate_interval]))' % v, 'to {{to}}')],
            stack=true,
            min=0,
          ) + lib.byNameColors({ ['to ' + s]: lib.stateColors[s] for s in std.objectFields(lib.stateColors) }),
          lib.timeseries(
            'Fan-out errors and passive ejections',
            'Fan-out requests to this backend that did not contribute, per second over 5m by reason (instance_backend_reason:probegate_fanout_backend_errors:rate5m), and ejections by passive health (probegate_passive_ejections_total).',
            'ops',
            [
              lib.target('sum by (reason) (instance_backend_reason:probegate_fanout_backend_errors:rate5m{%(sel)s})' % v, '{{reason}}'),
              lib.target('sum(rate(probegate_passive_ejections_total{%(sel)s}[$__rate_interval]))' % v, 'passive ejections'),
            ],
            min=0,
          ),
        ]),
        lib.row(8, [
          lib.timeseries(
            'Fan-out latency',
            'How long the backend takes with its part of a fan-out round (probegate_fanout_backend_duration_seconds): the median and the 90th percentile, which outlier detection compares with the peers\' median.',
            's',
            [
              lib.target('histogram_quantile(0.5, sum by (le) (rate(probegate_fanout_backend_duration_seconds_bucket{%(sel)s}[$__rate_interval])))' % v, 'p50'),
              lib.target('histogram_quantile(0.9, sum by (le) (rate(probegate_fanout_backend_duration_seconds_bucket{%(sel)s}[$__rate_interval])))' % v, 'p90'),
            ],
            min=0,
          ),
          lib.timeseries(
            'Outlier ejections',
            'Ejections of the backend by outlier detection, by reason (probegate_outlier_ejections_total; enforced="false" is what a dry run would have done), and whether it is ejected now (probegate_backend_outlier_ejected).',
            'short',
            [
              lib.target('sum by (reason, enforced) (increase(probegate_outlier_ejections_total{%(sel)s}[$__rate_interval]))' % v, '{{reason}} enforced={{enforced}}'),
              lib.target('max(probegate_backend_outlier_ejected{%(sel)s})' % v, 'ejected now'),
            ],
            min=0,
          ),
        ]),
      ]),
    ),
  },
}
