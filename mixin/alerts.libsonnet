// The alerts of probegate. Each expression selects its targets with
// _config.probegateSelector and waits _config.alertFor[name] before firing.
//
// The per-backend alerts join probegate_backend_info so that the alert
// itself carries the backend's url and probe path: whoever gets paged sees
// what to fix without opening a dashboard.
//
// Several replicas of probegate watch the same backends, so the per-backend
// alerts aggregate over _config.replicaLabels: one alert per backend,
// however many replicas see the problem, with that number in $value. An
// alert fires when any replica has seen the condition throughout its `for`
// (not necessarily the same replica throughout): a backend one replica
// cannot reach is a backend some clients cannot reach, and the number in
// the description tells a partition (one replica) from an outage (all).
// ProbegateReadinessPeerOverride, every replica's answer to one pool-wide
// outage, aggregates alike. The alerts about a replica itself (readiness,
// its store, its reloads) keep its instance.
{
  local config = self._config,

  // A summary names at most the alert's own labels ({{ $labels.backend }}):
  // it stays the same while the alert fires, whatever its value.
  local alert(name, severity, expr, summary, description) = {
    assert std.objectHas(config.alertFor, name) : 'mixin: _config.alertFor has no entry for ' + name,
    assert std.length(std.findSubstr('{{', summary)) == std.length(std.findSubstr('{{ $labels.', summary)) : 'mixin: the summary of ' + name + ' may template only $labels',
    alert: name,
    expr: expr,
    'for': config.alertFor[name],
    labels: { severity: severity },
    annotations: {
      summary: summary,
      description: description,
      runbook_url: config.runbookURLPattern % std.asciiLower(name),
    },
  },

  // withBackendInfo adds the url and probe_path labels of
  // probegate_backend_info to a filtered probegate_backend_state vector;
  // ignoring matches the two on every label but the state and the info's own.
  local withBackendInfo(vector) = |||
    (
      %(vector)s
    )
    * ignoring (state, url, probe_path) group_left (url, probe_path)
      probegate_backend_info{%(sel)s}
  ||| % { vector: std.stripChars(vector, '\n'), sel: config.probegateSelector },

  // acrossReplicas aggregates a per-replica vector with op without the
  // labels that tell replicas apart.
  local acrossReplicas(op, vector) =
    '%(op)s without (%(replicas)s) (\n%(vector)s\n)\n' % {
      op: op,
      replicas: std.join(', ', config.replicaLabels),
      vector: std.join('\n', ['  ' + line for line in std.split(std.stripChars(vector, '\n'), '\n')]),
    },

  local vars = {
    sel: config.probegateSelector,
  },

  // backendQuery is a template that runs the PromQL query (a printf
  // format whose one %q is the alert's backend) and, when it answers,
  // writes before, the first sample's value or label, and after. An
  // annotation says with it why a backend is in trouble, from the series
  // the alert's expression does not carry.
  local backendQuery(query, before, shown, after='') =
    '{{ with printf `' + query + '` $labels.backend | query }}{{ with first . }}' + before + shown + after + '{{ end }}{{ end }}',

  // failureReason is ", mostly <reason>" for the reason most of a
  // backend's failed probes had over the last window, across replicas;
  // lastStatus is ", last answering HTTP <code>" when its last probe got
  // an HTTP answer.
  local failureReason(window) = backendQuery(
    'topk(1, sum by (reason) (increase(probegate_probe_failures_total{' + config.probegateSelector + ', backend=%q}[' + window + '])) > 0)',
    ', mostly ', '{{ .Labels.reason }}'
  ),
  local lastStatus = backendQuery(
    'max(probegate_backend_last_probe_status_code{' + config.probegateSelector + ', backend=%q}) > 0',
    ', last answering HTTP ', '{{ value . }}'
  ),

  // whatToCheck says, for each reason a probe fails with, where to look.
  local whatToCheck = 'Check by reason: timeout, the backend\'s load or a health_probe.timeout too short for it; transport, whether it runs and listens at {{ $labels.url }}; http_5xx and http_429, its own logs and load; body_mismatch, its answer against health_probe.expect_body_regexp.',

  // durationSeconds is a Prometheus duration of whole units (14d, 1w2d,
  // 36h) in seconds, for comparisons PromQL cannot write with a duration.
  local durationSeconds(d) =
    local units = { y: 365 * 86400, w: 7 * 86400, d: 86400, h: 3600, m: 60, s: 1 };
    local bad = 'mixin: %s is not a duration of whole units such as 14d or 1w2d' % std.manifestJson(d);
    local step(acc, c) =
      if std.objectHas(units, c) then
        assert acc.digits != '' : bad;
        { total: acc.total + std.parseInt(acc.digits) * units[c], digits: '' }
      else
        assert std.member('0123456789', c) : bad;
        acc { digits: acc.digits + c };
    local parsed = std.foldl(step, std.stringChars(d), { total: 0, digits: '' });
    assert std.isString(d) && parsed.digits == '' && parsed.total > 0 : bad;
    parsed.total,

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'probegate',
        rules: [
          // Every other alert needs probegate's own metrics: without this
          // one, a probegate that is gone leaves, at most, stale alerts.
          // absent() covers the job disappearing from service discovery,
          // where no up series is left to be 0.
          alert(
            'ProbegateDown',
            'critical',
            |||
              up{%(sel)s} == 0
              or
              absent(up{%(sel)s})
            ||| % vars,
            'Prometheus cannot scrape probegate, so nothing gates, probes or fans out there, and no other probegate alert can fire.',
            'Prometheus has not scraped probegate {{ $labels.job }}/{{ $labels.instance }} for %(for)s (with no instance after the slash, no target of the job is left at all): its load balancers get no /ready, its clients no fan-out, and nobody watches its backends.' % { 'for': config.alertFor.ProbegateDown },
          ),
          alert(
            'ProbegateProbePathMisconfigured',
            'warning',
            acrossReplicas('count', withBackendInfo('probegate_backend_state{%(sel)s, state="probe_unsupported"} == 1' % vars)),
            'Backend {{ $labels.backend }} refuses its probe path, so probegate keeps it in service without a health signal.',
            ('Backend {{ $labels.backend }} ({{ $labels.url }}) of probegate job {{ $labels.job }} has refused probes of {{ $labels.probe_path }} for %(for)s, as {{ $value }} replica(s) see it' % { 'for': config.alertFor.ProbegateProbePathMisconfigured })
            + lastStatus
            + ': it stays in service unverified, and probegate cannot take it out when it fails. Check which path the backend serves its health on, and set its health_probe.path to it.',
          ),
          alert(
            'ProbegatePoolProbePathMisconfigured',
            'critical',
            |||
              count without (backend, state) (
                probegate_backend_state{%(sel)s, state="probe_unsupported"} == 1
              )
              == probegate_backends_configured{%(sel)s}
            ||| % vars,
            'Every backend of a probegate instance refuses its probe path, so none of them has a health signal.',
            'All {{ $value }} backends of probegate {{ $labels.instance }} have refused their probe paths for %(for)s: the pool stays in service without any health check. The probe path is most likely wrong for the whole pool (health_probe.path).' % { 'for': config.alertFor.ProbegatePoolProbePathMisconfigured },
          ),
          alert(
            'ProbegateBackendUnhealthy',
            'warning',
            acrossReplicas('count', withBackendInfo('probegate_backend_state{%(sel)s, state="unhealthy"} == 1' % vars)),
            'Backend {{ $labels.backend }} is out of service: its health probes fail.',
            ('Backend {{ $labels.backend }} ({{ $labels.url }}) of probegate job {{ $labels.job }} has been unhealthy and out of service for %(for)s, as {{ $value }} replica(s) see it: their probes of {{ $labels.probe_path }} fail' % { 'for': config.alertFor.ProbegateBackendUnhealthy })
            + failureReason(config.alertFor.ProbegateBackendUnhealthy)
            + lastStatus
            + '. ' + whatToCheck + ' If other replicas still keep it in service, look at the network between these replicas and the backend.',
          ),
          // Entering and leaving maintenance is an operator's doing, not
          // flapping, and nothing fires for a backend in maintenance. The
          // counter says only which state a change entered, so a change
          // out of maintenance is taken off as one per change into it.
          // Each replica counts the changes it saw; summing them would
          // make three replicas that each saw two changes one flapping
          // backend, so the alert takes the replica that saw the most.
          alert(
            'ProbegateBackendFlapping',
            'warning',
            acrossReplicas('max', |||
              (
                sum without (to) (
                  increase(probegate_backend_transitions_total{%(sel)s, to!="maintenance"}[%(window)s])
                )
                -
                (
                  sum without (to) (
                    increase(probegate_backend_transitions_total{%(sel)s, to="maintenance"}[%(window)s])
                  )
                  or
                  sum without (to) (
                    increase(probegate_backend_transitions_total{%(sel)s, to!="maintenance"}[%(window)s])
                  ) * 0
                )
              ) >= %(threshold)d
              unless ignoring (state)
                probegate_backend_state{%(sel)s, state="maintenance"} == 1
            ||| % vars { window: config.backendFlappingWindow, threshold: config.backendFlappingTransitions }),
            'Backend {{ $labels.backend }} keeps entering and leaving service.',
            ('Backend {{ $labels.backend }} of probegate job {{ $labels.job }} changed state {{ printf "%%.0f" $value }} times in the last %(window)s, not counting planned maintenance, as the replica that saw the most changes counts them: it keeps entering and leaving service' % { window: config.backendFlappingWindow })
            + failureReason(config.backendFlappingWindow)
            + '. ' + whatToCheck + ' A backend that fails only some probes may also need more health_probe.failures.',
          ),
          alert(
            'ProbegatePoolFailOpen',
            'critical',
            'probegate_pool_fail_open{%(sel)s} == 1\n' % vars,
            'A probegate pool fails open: traffic goes to every configured backend, healthy or not.',
            'Too few backends of probegate {{ $labels.instance }} are in service, so for %(for)s it has sent traffic to every configured backend, unhealthy ones included.' % { 'for': config.alertFor.ProbegatePoolFailOpen },
          ),
          alert(
            'ProbegatePartialFanout',
            'warning',
            // A round whose only missing backends were in maintenance,
            // or were cut as stragglers (besides any in maintenance), is
            // partial by design: each is counted apart and left out. A
            // probegate too old to count them counts as none.
            |||
              (
                (
                  rate(probegate_fanout_partial_total{%(sel)s}[%(window)s])
                  -
                  (
                    rate(probegate_fanout_partial_maintenance_total{%(sel)s}[%(window)s])
                    or
                    rate(probegate_fanout_partial_total{%(sel)s}[%(window)s]) * 0
                  )
                  -
                  (
                    rate(probegate_fanout_partial_stragglers_total{%(sel)s}[%(window)s])
                    or
                    rate(probegate_fanout_partial_total{%(sel)s}[%(window)s]) * 0
                  )
                )
                  /
                rate(probegate_fanout_requests_total{%(sel)s}[%(window)s])
              ) > %(ratio)g
            ||| % vars { window: config.partialFanoutWindow, ratio: config.partialFanoutRatio },
            'Fan-out requests get answers from only part of the pool.',
            '{{ $value | humanizePercentage }} of the fan-out requests to probegate {{ $labels.instance }} over the last %(window)s were answered by fewer backends than configured, not counting backends in maintenance or stragglers cut: clients get partial results.' % { window: config.partialFanoutWindow },
          ),
          // A backend's rounds are the observations of its fan-out
          // duration, which a straggler's cut counts too. Each replica
          // cuts in the rounds it serves; one alert per backend, with the
          // share of the replica that cut it most.
          alert(
            'ProbegateBackendStraggling',
            'warning',
            acrossReplicas('max', |||
              (
                rate(probegate_fanout_stragglers_total{%(sel)s}[%(window)s])
                  /
                rate(probegate_fanout_backend_duration_seconds_count{%(sel)s}[%(window)s])
              ) > %(ratio)g
            ||| % vars { window: config.stragglersWindow, ratio: config.stragglersRatio }),
            'Backend {{ $labels.backend }} is cut from many fan-out rounds as a straggler.',
            'Backend {{ $labels.backend }} of probegate job {{ $labels.job }} was cut as a straggler from {{ $value | humanizePercentage }} of its fan-out rounds over the last %(window)s, on the replica that cut it most: it answers much slower than its peers in the same rounds, and clients get answers without it. Check its load and its fan-out latency against its peers\' (the Backend dashboard), and whether fanout.stragglers cuts too early for the queries it serves.' % { window: config.stragglersWindow },
          ),
          alert(
            'ProbegateOutlierEjectionsRepeated',
            'warning',
            // Ejections and suppressed ejections alike: either way a
            // backend keeps doing much worse than its peers. A dry run's
            // would-be ejections (enforced="false") page nobody. Per
            // replica: each judges the fan-out rounds it serves itself.
            // Summed `without` what tells ejections apart, so that the
            // target's labels (cluster, pod) stay on the alert.
            |||
              sum without (backend, reason, enforced) (
                increase(probegate_outlier_ejections_total{%(sel)s, enforced="true"}[%(window)s])
                or
                increase(probegate_outlier_ejections_suppressed_total{%(sel)s}[%(window)s])
              ) >= %(threshold)g
            ||| % vars { window: config.outlierEjectionsWindow, threshold: config.outlierEjectionsThreshold },
            'Outlier detection keeps ejecting backends, or would but for the readiness budget.',
            'Outlier detection of probegate {{ $labels.instance }} ejected backends, or was held back by the readiness budget, {{ $value | humanize }} times over the last %(window)s: some backend keeps failing or answering much slower than its peers in the same fan-out rounds.' % { window: config.outlierEjectionsWindow },
          ),
          // Per replica: the descriptors, ports and memory are its own.
          alert(
            'ProbegateLocalProbeFailures',
            'warning',
            |||
              sum without (backend, reason) (
                increase(probegate_probe_failures_total{%(sel)s, reason="local"}[%(window)s])
              ) > 0
            ||| % vars { window: config.localProbeFailuresWindow },
            'Probes fail for a reason of probegate\'s own, so they judge no backend.',
            'Probegate {{ $labels.instance }} had {{ $value | humanize }} probes fail over the last %(window)s because it ran out of file descriptors, local ports or memory: those probes changed no backend\'s state, so a backend that failed meanwhile was not taken out. Its log names the cause once.' % { window: config.localProbeFailuresWindow },
          ),
          alert(
            'ProbegateNotReady',
            'warning',
            |||
              probegate_gate_ready{%(sel)s} == 0
              and
              probegate_gate_draining{%(sel)s} == 0
            ||| % vars,
            'A probegate instance is not ready although it is not draining.',
            'Probegate {{ $labels.instance }} has answered /ready with 503 for %(for)s without draining, and the load balancers in front have taken it out: either its readiness budget does not hold (too few backends in service, the backends check), or it has never read its shared maintenance store and so does not know which backends are out (the maintenance_store check). probegate_gate_check_success names the failing check.' % { 'for': config.alertFor.ProbegateNotReady },
          ),
          alert(
            'ProbegateReadinessBudgetBlocksMaintenance',
            'info',
            |||
              probegate_readiness_disruptions_allowed{%(sel)s} == 0
              and
              probegate_backends_in_service{%(sel)s} == probegate_backends_configured{%(sel)s}
              and
              probegate_backends_configured{%(sel)s} > 0
            ||| % vars,
            'The readiness budget allows no disruption even with every backend in service.',
            'Every backend of probegate {{ $labels.instance }} has been in service for %(for)s, yet its readiness budget allows no disruption: taking any backend down for maintenance makes /ready fail. Lower readiness.min_available or raise readiness.max_unavailable.' % { 'for': config.alertFor.ProbegateReadinessBudgetBlocksMaintenance },
          ),
          alert(
            'ProbegateReadinessBudgetGuardsNothing',
            'warning',
            'probegate_backends_configured{%(sel)s} == 0\n' % vars,
            'A probegate instance has no backends configured, so its readiness budget guards nothing.',
            'Probegate {{ $labels.instance }} has had no backends configured for %(for)s: there is nothing to probe or fan out to. Check its configuration file and --backend flags.' % { 'for': config.alertFor.ProbegateReadinessBudgetGuardsNothing },
          ),
          alert(
            'ProbegateConfigReloadFailed',
            'warning',
            'probegate_config_last_reload_successful{%(sel)s} == 0\n' % vars,
            'A probegate configuration reload failed; the previous configuration is still running.',
            'The last configuration reload of probegate {{ $labels.instance }} was rejected, and no reload has succeeded for %(for)s since: it keeps running the previous configuration. Run probegate check-config on the file and read the logs.' % { 'for': config.alertFor.ProbegateConfigReloadFailed },
          ),
          alert(
            'ProbegateBackendMaintenanceLong',
            'info',
            acrossReplicas('count', withBackendInfo('probegate_backend_state{%(sel)s, state="maintenance"} == 1' % vars)),
            'Backend {{ $labels.backend }} has been in maintenance for a long time.',
            'Backend {{ $labels.backend }} ({{ $labels.url }}) of probegate job {{ $labels.job }} has been in maintenance, out of service, for %(for)s, as {{ $value }} replica(s) see it. If the work is done, end it with probegate maintenance stop {{ $labels.backend }}; give the next one a --ttl.' % { 'for': config.alertFor.ProbegateBackendMaintenanceLong },
          ),
          // Per replica: each one talks to the store on its own, and the
          // one that cannot refuses the writes it is asked for.
          alert(
            'ProbegateMaintenanceStoreDown',
            'warning',
            'probegate_maintenance_store_up{%(sel)s} == 0\n' % vars,
            'A probegate replica cannot reach its maintenance store: it refuses to start or end maintenance, and its view of the entries may be stale.',
            'The last operation of probegate {{ $labels.instance }} on its maintenance store has failed for %(for)s: starting or ending maintenance there answers 503, and it shows the entries it last read, marked stale (with etcd they end when etcd ends them; with the file store, at their until). Check the store (etcd, or the file under --storage.path) and the replica\'s logs.' % { 'for': config.alertFor.ProbegateMaintenanceStoreDown },
          ),
          // One alert for the job: the override is every replica's answer
          // to the same pool-wide outage.
          alert(
            'ProbegateReadinessPeerOverride',
            'info',
            acrossReplicas('count', 'probegate_readiness_peer_override{%(sel)s} == 1' % vars),
            'Probegate replicas stay ready although their readiness budget does not hold, because no replica\'s budget holds.',
            '{{ $value }} replica(s) of probegate job {{ $labels.job }} have answered /ready with 200 for %(for)s although their readiness budget does not hold: no live replica\'s budget holds, so the backends are down for all of them, and they stay ready to keep answering which backends failed and why. The ProbegateBackendUnhealthy alerts name the backends.' % { 'for': config.alertFor.ProbegateReadinessPeerOverride },
          ),
          // A replica group is a shard of the data the fan-out reads; a
          // group of one backend is that backend, whose own alerts speak
          // for it, so these two judge groups of two replicas or more.
          // One alert per group, however many replicas see it.
          alert(
            'ProbegateGroupDown',
            'critical',
            acrossReplicas('count', |||
              probegate_group_in_service{%(sel)s} == 0
              and
              probegate_group_replicas{%(sel)s} >= 2
            ||| % vars),
            'Replica group {{ $labels.group }} has no replica in service: its data is missing from every fan-out answer.',
            'No replica of group {{ $labels.group }} of probegate job {{ $labels.job }} has been in service for %(for)s, as {{ $value }} replica(s) see it: fan-out answers come without its data, and rounds that demand every group fail. The ProbegateBackendUnhealthy alerts, or the status page, name its replicas and why they are out (unhealthy, ejected or in maintenance).' % { 'for': config.alertFor.ProbegateGroupDown },
          ),
          alert(
            'ProbegateGroupAtRisk',
            'warning',
            acrossReplicas('count', |||
              probegate_group_in_service{%(sel)s} == 1
              and
              probegate_group_replicas{%(sel)s} >= 2
            ||| % vars),
            'Replica group {{ $labels.group }} is on its last replica in service.',
            'Group {{ $labels.group }} of probegate job {{ $labels.job }} has had a single replica in service for %(for)s, as {{ $value }} replica(s) see it: the next failure takes its data out of every fan-out answer. Bring its other replicas back (ProbegateBackendUnhealthy names the failing ones; a maintenance entry may hold one out), and keep readiness.per_group so that no maintenance or ejection takes the last one.' % { 'for': config.alertFor.ProbegateGroupAtRisk },
          ),
          // Shared probing: each backend is probed by a few replicas, its
          // vantage points, and every replica reports a vantage point that
          // disagrees alone with the others on a backend. The dissenter is
          // the replica label, not the target: one alert per dissenting
          // replica, however many replicas report it, with the most
          // backends any of them counts.
          alert(
            'ProbegateVantageDisagreement',
            'warning',
            acrossReplicas('max', 'probegate_vantage_dissents{%(sel)s} > 0' % vars),
            'Probegate replica {{ $labels.replica }} disagrees alone with the other replicas probing some backends.',
            'Probegate replica {{ $labels.replica }} of job {{ $labels.job }} has disagreed alone with the other vantage points on {{ $value }} backend(s) (the most any replica counts) for %(for)s: its probes find those backends unhealthy while every other replica probing them finds them healthy, or the other way round. A lone dissenter ejects nothing: those backends keep the verdict of the others, on every replica. The path from {{ $labels.replica }} to those backends is most likely broken (its host\'s network, a firewall or network policy, a route, DNS); /healthz on any replica marks them with "dissenting": true under vantage_points.' % { 'for': config.alertFor.ProbegateVantageDisagreement },
          ),
          // Per replica: each one falls back on its own, when its own way
          // to the store or its own view of the peers fails.
          alert(
            'ProbegateLocalProbing',
            'warning',
            'probegate_probing_mode{%(sel)s, mode="local"} == 1\n' % vars,
            'A probegate replica has left shared probing and probes every backend itself.',
            'Probegate {{ $labels.instance }} has probed every backend itself, out of shared probing, for %(for)s: it has been out of sync with its store (etcd) for longer than the view lease, or it sees no live peer replica. Every replica in this state probes the whole pool, adding that many probes to the backends, and judges them alone again: a broken path from it takes backends out of service here. Check etcd and this replica\'s way to it (ProbegateMaintenanceStoreDown), and whether its peers run (probegate_replicas).' % { 'for': config.alertFor.ProbegateLocalProbing },
          ),
          // The value is the time left, negative once the chain expired;
          // probegate exports the expiry only for backends probed over TLS.
          // Replicas behind different balancers may be shown different
          // chains: the alert gives the one that expires first.
          alert(
            'ProbegateBackendCertExpiringSoon',
            'warning',
            acrossReplicas('min', withBackendInfo('probegate_backend_tls_cert_expiry_timestamp_seconds{%(sel)s} - time() < %(warning)d' % vars { warning: durationSeconds(config.certExpiryWarning) })),
            'The TLS certificate backend {{ $labels.backend }} presents expires soon.',
            'The certificate chain backend {{ $labels.backend }} ({{ $labels.url }}) of probegate job {{ $labels.job }} presents to its probes expires in {{ $value | humanizeDuration }} (the soonest any replica saw), less than %(warning)s: renew it before its probes, and its clients, fail the handshake.' % { warning: config.certExpiryWarning },
          ),
        ],
      },
    ],
  },
}
