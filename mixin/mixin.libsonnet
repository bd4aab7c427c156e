// The probegate monitoring mixin: alerts, recording rules and Grafana
// dashboards for the metrics of probegate, in the shape of
// https://monitoring.mixins.dev. Override _config to fit your labels:
//
//   (import 'mixin.libsonnet') + { _config+:: { probegateSelector: 'job="lb"' } }
(import 'config.libsonnet') +
(import 'alerts.libsonnet') +
(import 'rules.libsonnet') +
(import 'dashboards/dashboards.libsonnet')
