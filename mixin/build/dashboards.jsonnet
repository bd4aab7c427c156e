// Generates dashboards/*.json:
//   go tool jsonnet -S -m dashboards mixin/build/dashboards.jsonnet
// The top-level argument config is merged into _config (JSON merge patch).
function(config={})
  local mixin = (import '../mixin.libsonnet') + { _config:: std.mergePatch(super._config, config) };
  {
    [name]: std.manifestJsonEx(mixin.grafanaDashboards[name], '  ') + '\n'
    for name in std.objectFields(mixin.grafanaDashboards)
  }
