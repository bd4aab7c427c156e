// Generates rules/probegate-alerts.yaml and rules/probegate-rules.yaml:
//   go tool jsonnet -S -m rules mixin/build/rules.jsonnet
// The top-level argument config is merged into _config (JSON merge patch),
// e.g. --tla-code 'config={alertFor: {ProbegateNotReady: "1s"}}'.
function(config={})
  local mixin = (import '../mixin.libsonnet') + { _config:: std.mergePatch(super._config, config) };
  local header = '# Generated from mixin/ by `make rules`: edit the jsonnet, not this file.\n';
  {
    'probegate-alerts.yaml': header + std.manifestYamlDoc(mixin.prometheusAlerts, indent_array_in_object=false, quote_keys=false),
    'probegate-rules.yaml': header + std.manifestYamlDoc(mixin.prometheusRules, indent_array_in_object=false, quote_keys=false),
  }
