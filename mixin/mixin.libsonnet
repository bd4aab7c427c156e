// The probegate monitoring mixin: alerts, recording rules and Grafana
// dashboards for the metrics of probegate, in the shape of
// https://monitoring.mixins.dev. Override _config to fit your labels:
//
//   (import 'mixin.libsonnet') + { _config+:: { probegateSelector: 'job="lb"' } }
//
// A _config key the mixin does not know, a misspelt one most likely, is an
// error rather than a default silently kept: every output checks it.
local defaults = (import 'config.libsonnet')._config;

local unknownKeys(given, known) =
  std.setDiff(std.set(std.objectFields(given)), std.set(std.objectFields(known)));

(import 'config.libsonnet') +
(import 'alerts.libsonnet') +
(import 'rules.libsonnet') +
(import 'dashboards/dashboards.libsonnet') +
{
  local unknown = unknownKeys(self._config, defaults),
  local unknownAlerts = unknownKeys(self._config.alertFor, defaults.alertFor),
  assert std.length(unknown) == 0 :
         'mixin: unknown _config key(s) %s; the known keys are %s' % [
    std.join(', ', unknown),
    std.join(', ', std.objectFields(defaults)),
  ],
  assert std.length(unknownAlerts) == 0 :
         'mixin: _config.alertFor names unknown alert(s) %s; the alerts are %s' % [
    std.join(', ', unknownAlerts),
    std.join(', ', std.objectFields(defaults.alertFor)),
  ],
}
