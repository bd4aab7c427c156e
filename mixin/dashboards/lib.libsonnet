// A few constructors for Grafana dashboard JSON, in plain jsonnet. Every
// panel they build has a description, a unit, and the ${datasource}
// variable as its data source: dashboards_test.go checks exactly that.
{
  datasource:: { type: 'prometheus', uid: '${datasource}' },

  // stateColors colours the states of probegate_backend_state alike on
  // every panel.
  stateColors:: {
    unknown: 'text',
    healthy: 'green',
    unhealthy: 'red',
    probe_unsupported: 'orange',
    maintenance: 'blue',
    ejected: 'purple',
  },

  target(expr, legend, instant=false):: {
    datasource: $.datasource,
    expr: std.stripChars(expr, '\n'),
    legendFormat: legend,
    range: !instant,
    instant: instant,
  },

  local panel(type, title, description, unit, targets) = {
    type: type,
    title: title,
    description: description,
    datasource: $.datasource,
    targets: [targets[i] { refId: std.char(std.codepoint('A') + i) } for i in std.range(0, std.length(targets) - 1)],
    fieldConfig: { defaults: { unit: unit } },
  },

  timeseries(title, description, unit, targets, stack=false, min=null):: panel('timeseries', title, description, unit, targets) {
    fieldConfig+: {
      defaults+: {
        [if min != null then 'min']: min,
        custom: {
          drawStyle: 'line',
          lineWidth: 1,
          fillOpacity: if stack then 30 else 10,
          showPoints: 'never',
          spanNulls: false,
          stacking: { mode: if stack then 'normal' else 'none', group: 'A' },
        },
      },
    },
    options: {
      legend: { displayMode: 'list', placement: 'bottom', showLegend: true },
      tooltip: { mode: 'multi', sort: 'desc' },
    },
  },

  stat(title, description, unit, targets, textMode='value'):: panel('stat', title, description, unit, targets) {
    options: {
      reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
      colorMode: 'value',
      graphMode: 'none',
      textMode: textMode,
      justifyMode: 'auto',
    },
  },

  stateTimeline(title, description, unit, targets):: panel('state-timeline', title, description, unit, targets) {
    options: {
      mergeValues: true,
      showValue: 'auto',
      rowHeight: 0.9,
      legend: { displayMode: 'list', placement: 'bottom', showLegend: false },
      tooltip: { mode: 'single', sort: 'none' },
    },
  },

  table(title, description, unit, targets):: panel('table', title, description, unit, targets) {
    options: { showHeader: true, cellHeight: 'sm' },
  },

  // thresholdColors colours values from base upwards: [[base colour],
  // [value, colour], ...].
  thresholdColors(base, steps=[]):: {
    fieldConfig+: {
      defaults+: {
        color: { mode: 'thresholds' },
        thresholds: {
          mode: 'absolute',
          steps: [{ color: base, value: null }] + [{ color: s[1], value: s[0] } for s in steps],
        },
      },
    },
  },

  // byNameColors fixes the colour of each named series.
  byNameColors(colors):: {
    fieldConfig+: {
      overrides+: [
        {
          matcher: { id: 'byName', options: name },
          properties: [{ id: 'color', value: { mode: 'fixed', fixedColor: colors[name] } }],
        }
        for name in std.objectFields(colors)
      ],
    },
  },

  // oneHotRows turns a state-timeline of a one-hot state set, one row per
  // state, into coloured bars where each state was active.
  oneHotRows(colors):: {
    fieldConfig+: {
      overrides+: [
        {
          matcher: { id: 'byName', options: name },
          properties: [{
            id: 'mappings',
            value: [{
              type: 'value',
              options: {
                '0': { text: ' ', color: 'transparent', index: 0 },
                '1': { text: name, color: colors[name], index: 1 },
              },
            }],
          }],
        }
        for name in std.objectFields(colors)
      ],
    },
  },

  // layout places rows of panels on Grafana's 24-column grid: each row
  // shares the width evenly and has the given height; panel ids follow
  // the order, so they are stable.
  layout(rows):: std.foldl(
    function(acc, row)
      local width = std.floor(24 / std.length(row.panels));
      acc {
        y: acc.y + row.height,
        panels: acc.panels + [
          row.panels[i] {
            id: std.length(acc.panels) + i + 1,
            gridPos: { x: i * width, y: acc.y, w: width, h: row.height },
          }
          for i in std.range(0, std.length(row.panels) - 1)
        ],
      },
    rows,
    { y: 0, panels: [] },
  ).panels,

  row(height, panels):: { height: height, panels: panels },

  datasourceVariable:: {
    name: 'datasource',
    label: 'Data source',
    type: 'datasource',
    query: 'prometheus',
    regex: '',
    hide: 0,
    refresh: 1,
  },

  // queryVariable is a label_values variable refreshed with the time range.
  queryVariable(name, query, multi=false, allValue=null):: {
    name: name,
    label: name,
    type: 'query',
    datasource: $.datasource,
    query: { query: query, refId: 'PrometheusVariableQueryEditor-VariableQuery', qryType: 1 },
    definition: query,
    regex: '',
    hide: 0,
    refresh: 2,
    sort: 1,
    multi: multi,
    includeAll: allValue != null,
    [if allValue != null then 'allValue']: allValue,
  },

  // selector is the mixin's selector, narrowed to the cluster variable
  // when showMultiCluster is on: every variable but the cluster's own, and
  // every query through it, carries it.
  selector(config):: config.probegateSelector +
                     (if config.showMultiCluster then ', %s="$cluster"' % config.clusterLabel else ''),

  // clusterVariables are the cluster variable when showMultiCluster is on,
  // none otherwise. It lists the clusters the mixin's selector finds.
  clusterVariables(config):: if config.showMultiCluster then [
    $.queryVariable('cluster', 'label_values(probegate_build_info{%s}, %s)' % [config.probegateSelector, config.clusterLabel]),
  ] else [],

  dashboard(config, uid, title, variables, panels):: {
    uid: config.dashboardUIDPrefix + uid,
    title: config.dashboardTitlePrefix + title,
    tags: config.dashboardTags,
    editable: true,
    graphTooltip: 1,
    schemaVersion: 39,
    timezone: '',
    refresh: config.dashboardRefresh,
    time: { from: config.dashboardTimeFrom, to: 'now' },
    links: [{
      type: 'dashboards',
      title: 'probegate',
      tags: config.dashboardTags,
      asDropdown: true,
      includeVars: true,
      keepTime: true,
    }],
    templating: { list: [$.datasourceVariable] + $.clusterVariables(config) + variables },
    panels: panels,
  },
}
