package discovery

import (
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"go.yaml.in/yaml/v3"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// relabelled is a configuration with the relabelling rules in rules
// (YAML), validated as a loaded file is.
func relabelled(t *testing.T, rules string) *config.Config {
	t.Helper()
	cfg := config.Default()
	if rules != "" {
		if err := yaml.Unmarshal([]byte(rules), &cfg.RelabelConfigs); err != nil {
			t.Fatal(err)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestTargetOf: the labels of a relabelled target make the backend's
// name, URL and probe path, with their defaults; relabelling can drop a
// target or set any of them; a target that cannot be a backend is an
// error naming the label.
func TestTargetOf(t *testing.T) {
	cases := []struct {
		name          string
		group, labels model.LabelSet
		rules         string
		drop          bool
		err           string
		want          pool.Target // Name, URL and Probe.Path
	}{
		{name: "defaults", labels: model.LabelSet{"__address__": "10.0.0.1:8081"},
			want: pool.Target{Name: "10.0.0.1:8081", URL: "http://10.0.0.1:8081", Probe: config.HealthProbe{Path: "/healthz"}}},
		{name: "labels set in the file", labels: model.LabelSet{"__address__": "pdb-1:8081", "__scheme__": "https", "__base_path__": "/pdb", "__probe_path__": "/status", "backend": "pdb-1"},
			want: pool.Target{Name: "pdb-1", URL: "https://pdb-1:8081/pdb", Probe: config.HealthProbe{Path: "/status"}}},
		{name: "group labels, target labels win", group: model.LabelSet{"__scheme__": "https", "backend": "group"}, labels: model.LabelSet{"__address__": "h:1", "backend": "own"},
			want: pool.Target{Name: "own", URL: "https://h:1", Probe: config.HealthProbe{Path: "/healthz"}}},
		{name: "relabelling sets the name and probe path", labels: model.LabelSet{"__address__": "h:1", "__meta_dns_name": "_pdb._tcp.example"},
			rules: `[{source_labels: [__address__], regex: '([^:]+):.*', target_label: backend, replacement: 'pdb-$1'}, {target_label: __probe_path__, replacement: /ready}]`,
			want:  pool.Target{Name: "pdb-h", URL: "http://h:1", Probe: config.HealthProbe{Path: "/ready"}}},
		{name: "relabelling reads the default probe path", labels: model.LabelSet{"__address__": "h:1"},
			rules: `[{source_labels: [__probe_path__], target_label: __base_path__, replacement: '/api'}]`,
			want:  pool.Target{Name: "h:1", URL: "http://h:1/api", Probe: config.HealthProbe{Path: "/healthz"}}},
		{name: "dropped", labels: model.LabelSet{"__address__": "h:1", "env": "test"},
			rules: `[{source_labels: [env], regex: test, action: drop}]`, drop: true},
		{name: "kept by keep", labels: model.LabelSet{"__address__": "h:1", "env": "prod"},
			rules: `[{source_labels: [env], regex: prod, action: keep}]`,
			want:  pool.Target{Name: "h:1", URL: "http://h:1", Probe: config.HealthProbe{Path: "/healthz"}}},
		{name: "no address", labels: model.LabelSet{"backend": "x"}, err: "no __address__ label"},
		{name: "address without port", labels: model.LabelSet{"__address__": "h"}, err: `__address__ "h" is not host:port`},
		{name: "address with a path", labels: model.LabelSet{"__address__": "h:1/x"}, err: "is not host:port"},
		{name: "bad scheme", labels: model.LabelSet{"__address__": "h:1", "__scheme__": "ftp"}, err: `__scheme__ "ftp": want http or https`},
		{name: "relative base path", labels: model.LabelSet{"__address__": "h:1", "__base_path__": "pdb"}, err: `__base_path__ "pdb"`},
		{name: "relative probe path", labels: model.LabelSet{"__address__": "h:1", "__probe_path__": "status"}, err: `__probe_path__ "status" must start with /`},
		{name: "IPv6 address needs a name", labels: model.LabelSet{"__address__": "[::1]:1"}, err: `backend name "[::1]:1" may contain only`},
		{name: "IPv6 address with a name", labels: model.LabelSet{"__address__": "[::1]:1", "backend": "v6"},
			want: pool.Target{Name: "v6", URL: "http://[::1]:1", Probe: config.HealthProbe{Path: "/healthz"}}},
		{name: "bad name", labels: model.LabelSet{"__address__": "h:1", "backend": "a b"}, err: `backend name "a b"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := relabelled(t, c.rules)
			got, keep, err := targetOf(c.group, c.labels, cfg)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if keep == c.drop {
				t.Fatalf("keep = %v, want %v", keep, !c.drop)
			}
			if c.drop {
				return
			}
			if got.Name != c.want.Name || got.URL != c.want.URL || got.Probe.Path != c.want.Probe.Path {
				t.Errorf("got name %q url %q probe path %q, want %q %q %q", got.Name, got.URL, got.Probe.Path, c.want.Name, c.want.URL, c.want.Probe.Path)
			}
			if got.Probe.Interval != cfg.HealthProbe.Interval || got.ClientConfig.FollowRedirects != cfg.HTTPClientConfig.FollowRedirects {
				t.Errorf("probe %+v / client %+v: want the top-level health_probe and http_client_config", got.Probe, got.ClientConfig)
			}
		})
	}
}

// TestDiscoveredSortsAndReports: a mechanism's backends come sorted by
// name whatever the order of its groups, and a bad target is reported
// without hiding the good ones.
func TestDiscoveredSortsAndReports(t *testing.T) {
	groups := []*targetgroup.Group{
		{Source: "b", Targets: []model.LabelSet{{"__address__": "h:2"}, {"__address__": "bad"}}},
		{Source: "a", Targets: []model.LabelSet{{"__address__": "h:1"}}},
	}
	targets, errs := discovered(groups, relabelled(t, ""))
	if len(targets) != 2 || targets[0].Name != "h:1" || targets[1].Name != "h:2" {
		t.Errorf("targets %+v, want h:1 then h:2", targets)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `"bad" is not host:port`) || !strings.Contains(errs[0].Error(), "from b") {
		t.Errorf("errors %v, want one naming the bad target and its source", errs)
	}
}

// TestMergeStaticWins: a discovered backend named like a static one, or
// like one an earlier mechanism found, is left out and reported; the
// static backends come first.
func TestMergeStaticWins(t *testing.T) {
	static := []pool.Target{{Name: "pdb-1", URL: "http://static:1"}}
	found := map[string][]pool.Target{
		"file": {{Name: "pdb-1", URL: "http://file:1"}, {Name: "pdb-2", URL: "http://file:2"}},
		"dns":  {{Name: "pdb-2", URL: "http://dns:2"}, {Name: "pdb-3", URL: "http://dns:3"}},
	}
	targets, count, clashes := merge(static, found)
	var urls []string
	for _, t := range targets {
		urls = append(urls, t.URL)
	}
	if got := strings.Join(urls, " "); got != "http://static:1 http://file:2 http://dns:3" {
		t.Errorf("targets %s", got)
	}
	if count["file"] != 1 || count["dns"] != 1 {
		t.Errorf("counts %v, want one backend each", count)
	}
	want := []clash{{"pdb-1", "file", "static"}, {"pdb-2", "dns", "file"}}
	if len(clashes) != 2 || clashes[0] != want[0] || clashes[1] != want[1] {
		t.Errorf("clashes %+v, want %+v", clashes, want)
	}
}

// TestDiscoveredRedactsUserinfo: a password in a discovered address or in
// any other label never shows in the error that reports the target.
func TestDiscoveredRedactsUserinfo(t *testing.T) {
	groups := []*targetgroup.Group{{Source: "f", Targets: []model.LabelSet{
		{"__address__": "alice:hunter2@127.0.0.1:28001"},
		{"__address__": "h:1", "__scheme__": "http://bob:s3cret@h", "origin": "https://carol:pa55@x/"},
		{"__address__": "h:2", "backend": "dave:letmein@h"},
	}}}
	_, errs := discovered(groups, relabelled(t, ""))
	if len(errs) != 3 {
		t.Fatalf("errors %v, want three", errs)
	}
	for _, err := range errs {
		for _, secret := range []string{"hunter2", "s3cret", "pa55", "letmein"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q shows the password %s", err, secret)
			}
		}
		if !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("error %q does not show where the password was", err)
		}
	}
}
