// Generates deploy/kubernetes/prometheusrule.yaml, the alerts and recording
// rules as a prometheus-operator PrometheusRule:
//   go tool jsonnet -S -m deploy/kubernetes mixin/build/prometheusrule.jsonnet
// The top-level argument config is merged into _config (JSON merge patch).
function(config={})
  local mixin = (import '../mixin.libsonnet') + { _config:: std.mergePatch(super._config, config) };
  local header = '# Generated from mixin/ by `make prometheusrule`: edit the jsonnet, not this file.\n';
  {
    'prometheusrule.yaml': header + std.manifestYamlDoc({
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: {
        name: 'probegate',
        labels: { 'app.kubernetes.io/name': 'probegate' },
      },
      spec: {
        groups: mixin.prometheusAlerts.groups + mixin.prometheusRules.groups,
      },
    }, indent_array_in_object=false, quote_keys=false),
  }
