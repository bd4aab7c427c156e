// The knobs of the probegate mixin. Override any of them from your own
// jsonnet: (import 'mixin.libsonnet') + { _config+:: { probegateSelector: 'job="lb"' } }.
{
  _config+:: {
    // probegateSelector picks the probegate targets. It is spliced into every
    // alert and recording rule, every dashboard query and every dashboard
    // variable, so a selector such as 'job="probegate", cluster="eu-1"'
    // narrows all of them alike.
    probegateSelector: 'job="probegate"',

    // showMultiCluster gives every dashboard a cluster variable, the values
    // of clusterLabel on probegate's series, and narrows every dashboard
    // query and variable to the cluster chosen: for one Grafana over the
    // Prometheus of several clusters (kubernetes-mixin's convention). The
    // rules need no switch: they aggregate with `without`, so the cluster
    // label of a series survives them either way.
    showMultiCluster: false,
    clusterLabel: 'cluster',

    // replicaLabels are the labels that tell the replicas of one probegate
    // apart: the target's instance and, on Kubernetes, its pod. The
    // per-backend alerts aggregate `without` them, so R replicas watching
    // one backend raise one alert for it, not R; every other label (job,
    // cluster, namespace) stays on the alert.
    replicaLabels: ['instance', 'pod'],

    // alertFor is how long each alert's condition must hold before it fires.
    // Every alert of alerts.libsonnet has an entry; a missing one is an error.
    alertFor: {
      // A refused probe path is a configuration mistake, not an outage: give
      // a rollout time to fix it before anyone is told.
      // Scrapes failing, or the job gone from the targets, for this long.
      ProbegateDown: '5m',
      ProbegateProbePathMisconfigured: '10m',
      ProbegatePoolProbePathMisconfigured: '10m',
      ProbegateBackendUnhealthy: '5m',
      ProbegateBackendFlapping: '5m',
      ProbegatePoolFailOpen: '2m',
      ProbegatePartialFanout: '15m',
      // A backend slower than its peers for ten minutes is no blip.
      ProbegateBackendStraggling: '10m',
      // Ejections are events; the window below already asks for several.
      ProbegateOutlierEjectionsRepeated: '1m',
      // One burst is in the log; failures that last mean probegate
      // itself is short of descriptors or ports.
      ProbegateLocalProbeFailures: '5m',
      ProbegateNotReady: '5m',
      // A budget that allows no disruption matters at the next maintenance,
      // so it waits long enough not to fire during a rolling restart.
      ProbegateReadinessBudgetBlocksMaintenance: '1h',
      ProbegateReadinessBudgetGuardsNothing: '15m',
      ProbegateConfigReloadFailed: '10m',
      ProbegateBackendMaintenanceLong: $._config.maintenanceLongFor,
      ProbegateBackendCertExpiringSoon: '15m',
      // A store that etcd's leader election or a restart keeps away for a
      // minute or two is no news; five minutes of refused writes are.
      ProbegateMaintenanceStoreDown: '5m',
      // Every replica ready only because none of them has a budget that
      // holds: the backends are down for all, and the other alerts say which.
      ProbegateReadinessPeerOverride: '10m',
      // A group with no replica in service is missing from every fan-out
      // answer: a minute rules out a probe's blip.
      ProbegateGroupDown: '1m',
      // A group on its last replica loses its data with the next failure;
      // ten minutes let a rolling restart of the replicas pass.
      ProbegateGroupAtRisk: '10m',
      // A vantage point is named a lone dissenter only after three probe
      // intervals; ten minutes more tell a broken path from a rollout or
      // a backend that is only just changing state.
      ProbegateVantageDisagreement: '10m',
      // A replica falls back to probing everything whenever the store is
      // away longer than the view lease: a store's leader election or a
      // rolling restart of the replicas passes well within ten minutes.
      ProbegateLocalProbing: '10m',
    },

    // A backend whose TLS certificate chain, as its last probe over TLS saw
    // it, expires within this Prometheus duration (14d, 36h, 1w2d)
    // fires ProbegateBackendCertExpiringSoon: time to renew it.
    certExpiryWarning: '14d',

    // A backend in maintenance longer than this was most likely forgotten
    // there: ProbegateBackendMaintenanceLong tells someone (severity info).
    maintenanceLongFor: '24h',

    // A backend that changed state at least backendFlappingTransitions times
    // within backendFlappingWindow is flapping: by default three round trips
    // out of service and back in 15 minutes. increase() extrapolates to the
    // window's edges, so one transition fewer can reach the threshold when
    // it is small; six keeps that slack below one transition.
    backendFlappingWindow: '15m',
    backendFlappingTransitions: 6,

    // Fan-out rounds answered by fewer backends than configured, as a share
    // of all rounds over partialFanoutWindow, above which to alert.
    partialFanoutWindow: '5m',
    partialFanoutRatio: 0.1,

    // A backend cut as a straggler (fanout.stragglers) from more than
    // stragglersRatio of its fan-out rounds over stragglersWindow fires
    // ProbegateBackendStraggling.
    stragglersWindow: '5m',
    stragglersRatio: 0.1,

    // Outlier ejections, enforced or suppressed by the readiness budget,
    // per instance over outlierEjectionsWindow, from which to alert: one
    // backend's ejection is detection doing its job, a run of them a
    // backend (or a pool) in trouble.
    outlierEjectionsWindow: '30m',
    outlierEjectionsThreshold: 3,

    // Probes that failed for a reason of probegate's own (out of
    // descriptors, local ports or memory) over localProbeFailuresWindow:
    // any at all means the probes of that window judged nobody.
    localProbeFailuresWindow: '10m',

    // runbookURLPattern gets the alert name, lower-cased, for %s: the
    // anchors of mixin/runbook.md as GitHub renders them.
    runbookURLPattern: 'https://github.com/probegate/probegate/blob/main/mixin/runbook.md#%s',

    // Dashboards.
    dashboardTags: ['probegate'],
    dashboardTitlePrefix: 'probegate / ',
    dashboardUIDPrefix: 'probegate-',
    dashboardRefresh: '30s',
    dashboardTimeFrom: 'now-1h',
  },
}
