package discovery

import (
	"fmt"
	"reflect"
	"slices"
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
		{name: "a group label", group: model.LabelSet{"group": "s1"}, labels: model.LabelSet{"__address__": "h:1"},
			want: pool.Target{Name: "h:1", URL: "http://h:1", Group: "s1", Probe: config.HealthProbe{Path: "/healthz"}}},
		{name: "relabelling sets the group", labels: model.LabelSet{"__address__": "h:1", "__meta_shard": "s2"},
			rules: `[{source_labels: [__meta_shard], target_label: group}]`,
			want:  pool.Target{Name: "h:1", URL: "http://h:1", Group: "s2", Probe: config.HealthProbe{Path: "/healthz"}}},
		{name: "relabelling drops the group", labels: model.LabelSet{"__address__": "h:1", "group": "s1"},
			rules: `[{action: labeldrop, regex: group}]`,
			want:  pool.Target{Name: "h:1", URL: "http://h:1", Probe: config.HealthProbe{Path: "/healthz"}}},
		{name: "bad group", labels: model.LabelSet{"__address__": "h:1", "group": "shard 1"}, err: `group label: "shard 1" may contain only letters, digits`},
		{name: "group too long", labels: model.LabelSet{"__address__": "h:1", "group": model.LabelValue(strings.Repeat("g", 65))}, err: "group label: \"" + strings.Repeat("g", 65) + "\" is longer than 64 characters"},
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
			if got.Name != c.want.Name || got.URL != c.want.URL || got.Probe.Path != c.want.Probe.Path || got.Group != c.want.Group {
				t.Errorf("got name %q url %q probe path %q group %q, want %q %q %q %q", got.Name, got.URL, got.Probe.Path, got.Group,
					c.want.Name, c.want.URL, c.want.Probe.Path, c.want.Group)
			}
			if got.Probe.Interval != cfg.HealthProbe.Interval || got.ClientConfig.FollowRedirects != cfg.HTTPClientConfig.FollowRedirects {
				t.Errorf("probe %+v / client %+v: want the top-level health_probe and http_client_config", got.Probe, got.ClientConfig)
			}
		})
	}
}

// TestEvaluateSortsAndReports: a mechanism's backends come sorted by
// name whatever the order of its groups, and a bad target is reported,
// naming itself and its source, without hiding the good ones.
func TestEvaluateSortsAndReports(t *testing.T) {
	groups := []*targetgroup.Group{
		{Source: "b", Targets: []model.LabelSet{{"__address__": "h:2"}, {"__address__": "bad"}}},
		nil,
		{Source: "a", Targets: []model.LabelSet{{"__address__": "h:1"}}},
	}
	s := evaluate("file", groups, relabelled(t, ""), nil)
	if names := backendNames(s); names != "h:1 h:2" {
		t.Errorf("backends %s, want h:1 h:2", names)
	}
	if s.total != 3 || s.counts[dropInvalid] != 1 || len(dropped(s)) != 1 || len(s.examples) != 1 {
		t.Fatalf("total %d, counts %v, dropped %d, examples %v; want 3 targets, one invalid", s.total, s.counts, len(dropped(s)), s.examples)
	}
	if e := s.examples[0]; !strings.Contains(e, `"bad" is not host:port`) || !strings.Contains(e, "from b") || dropped(s)[0].err != e {
		t.Errorf("report %q, want one naming the bad target and its source", e)
	}
}

// backendNames are a source's backends' names, space-separated.
func backendNames(s *source) string {
	var names []string
	for _, r := range s.backends {
		names = append(names, r.target.Name)
	}
	return strings.Join(names, " ")
}

// TestEvaluateIsBoundedByTheLimit: of more backends than
// max_discovered_backends, the first by name stay, whatever their order
// in the groups, and the rest are dropped as over the limit; relabel
// drops and loops are told apart; however many targets are dropped, the
// source keeps only maxShownDropped of them and maxExamples reports.
func TestEvaluateIsBoundedByTheLimit(t *testing.T) {
	cfg := relabelled(t, `[{source_labels: [env], regex: test, action: drop}]`)
	cfg.MaxDiscoveredBackends = 3
	var targets []model.LabelSet
	for _, n := range []int{5, 1, 4, 2, 3, 6} {
		targets = append(targets, model.LabelSet{"__address__": model.LabelValue(fmt.Sprintf("h%d:1", n))})
	}
	targets = append(targets, model.LabelSet{"__address__": "h0:1", "env": "test"}, model.LabelSet{"__address__": "self:9797"})
	for i := range 2 * maxShownDropped {
		targets = append(targets, model.LabelSet{"__address__": model.LabelValue(fmt.Sprintf("bad%d", i))})
	}
	isLoop := func(u string) bool { return u == "http://self:9797" }
	s := evaluate("file", []*targetgroup.Group{{Source: "f", Targets: targets}}, cfg, isLoop)
	if names := backendNames(s); names != "h1:1 h2:1 h3:1" {
		t.Errorf("backends %s, want the first three by name", names)
	}
	want := map[string]int{dropLimit: 3, dropRelabel: 1, dropLoop: 1, dropInvalid: 2 * maxShownDropped}
	if fmt.Sprint(s.counts) != fmt.Sprint(want) || s.total != len(targets) {
		t.Errorf("counts %v of %d, want %v of %d", s.counts, s.total, want, len(targets))
	}
	if len(dropped(s)) != maxShownDropped || len(s.examples) != maxExamples {
		t.Errorf("kept %d dropped targets and %d examples, want %d and %d", len(dropped(s)), len(s.examples), maxShownDropped, maxExamples)
	}
	limited := map[string]bool{}
	for _, r := range dropped(s) {
		if r.reason == dropLimit {
			limited[r.target.Name] = true
		}
	}
	if len(limited) != 3 || !limited["h4:1"] || !limited["h5:1"] || !limited["h6:1"] {
		t.Errorf("dropped for the limit %v, want h4:1, h5:1 and h6:1", limited)
	}
}

// sourceOf is a source of mechanism whose backends are targets, as
// evaluation leaves it, for merge.
func sourceOf(mechanism string, targets ...pool.Target) *source {
	one := &tally{origin: origin{field: mechanism}, counts: map[string]int{}}
	s := &source{mechanism: mechanism, counts: map[string]int{}, tallies: []*tally{one}}
	for _, t := range targets {
		s.backends = append(s.backends, &record{target: t, tally: one})
	}
	return s
}

// TestMergeStaticWins: a discovered backend named like a static one, or
// like one an earlier mechanism found, is left out, reported and shown as
// dropped for its name; the static backends come first.
func TestMergeStaticWins(t *testing.T) {
	static := []pool.Target{{Name: "pdb-1", URL: "http://static:1"}}
	file := sourceOf("file", pool.Target{Name: "pdb-1", URL: "http://file:1"}, pool.Target{Name: "pdb-2", URL: "http://file:2"})
	dns := sourceOf("dns", pool.Target{Name: "pdb-2", URL: "http://dns:2"}, pool.Target{Name: "pdb-3", URL: "http://dns:3"})
	targets, clashes := merge(static, nil, []*source{file, dns})
	var urls []string
	for _, t := range targets {
		urls = append(urls, t.URL)
	}
	if got := strings.Join(urls, " "); got != "http://static:1 http://file:2 http://dns:3" {
		t.Errorf("targets %s", got)
	}
	if backendNames(file) != "pdb-2" || backendNames(dns) != "pdb-3" {
		t.Errorf("backends left %q and %q, want pdb-2 and pdb-3", backendNames(file), backendNames(dns))
	}
	for _, s := range []*source{file, dns} {
		if s.counts[dropNameClash] != 1 || len(dropped(s)) != 1 || dropped(s)[0].reason != dropNameClash {
			t.Errorf("%s: counts %v, dropped %d; want one name clash shown", s.mechanism, s.counts, len(dropped(s)))
		}
	}
	want := []clash{{name: "pdb-1", mechanism: "file", by: "static"}, {name: "pdb-2", mechanism: "dns", by: "file"}}
	if len(clashes) != 2 || clashes[0] != want[0] || clashes[1] != want[1] {
		t.Errorf("clashes %+v, want %+v", clashes, want)
	}

	// A static backend left out (at a peer's listener) keeps its name:
	// no discovered backend takes it.
	file = sourceOf("file", pool.Target{Name: "pdb-9", URL: "http://file:9"}, pool.Target{Name: "pdb-2", URL: "http://file:2"})
	targets, clashes = merge(static, []pool.Target{{Name: "pdb-9", URL: "http://peer:9797"}}, []*source{file})
	if len(targets) != 2 || targets[1].Name != "pdb-2" || len(clashes) != 1 || clashes[0] != (clash{name: "pdb-9", mechanism: "file", by: "static"}) {
		t.Errorf("with pdb-9 left out: targets %+v, clashes %+v; want static and pdb-2, pdb-9 a clash", targets, clashes)
	}
}

// TestMergeGroupNamespace: a discovered backend that would make a name
// mean both a replica group and a backend outside it is left out as a
// name clash, whichever side it is on: the static side wins, then the
// backend found first (an earlier mechanism, then the first by name).
func TestMergeGroupNamespace(t *testing.T) {
	target := func(name, group string) pool.Target {
		return pool.Target{Name: name, URL: "http://" + name + ":1", Group: group}
	}
	for _, tc := range []struct {
		name    string
		static  []pool.Target
		sources []*source
		kept    string
		clashes []clash
	}{
		{name: "a discovered group named like a static backend",
			static:  []pool.Target{target("db", "")},
			sources: []*source{sourceOf("file", target("db-a", "db"), target("db-b", "db"), target("other", ""))},
			kept:    "db other",
			clashes: []clash{{name: "db-a", mechanism: "file", by: "static", group: "db", byGroup: true}, {name: "db-b", mechanism: "file", by: "static", group: "db", byGroup: true}}},
		{name: "a discovered backend named like a static group",
			static:  []pool.Target{target("db-a", "db"), target("db-b", "db")},
			sources: []*source{sourceOf("file", target("db", ""), target("x", "db"))},
			kept:    "db-a db-b x",
			clashes: []clash{{name: "db", mechanism: "file", by: "static", group: "db"}}},
		{name: "a discovered backend in the group of its name",
			static:  []pool.Target{target("db-a", "db")},
			sources: []*source{sourceOf("file", target("db", "db"))},
			kept:    "db-a db"},
		{name: "between mechanisms, the earlier wins",
			sources: []*source{sourceOf("file", target("db", "")), sourceOf("dns", target("db-a", "db"))},
			kept:    "db",
			clashes: []clash{{name: "db-a", mechanism: "dns", by: "file", group: "db", byGroup: true}}},
		{name: "within a source, the first wins",
			sources: []*source{sourceOf("file", target("db", "x"), target("db-a", "db"))},
			kept:    "db",
			clashes: []clash{{name: "db-a", mechanism: "file", by: "file", group: "db", byGroup: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			targets, clashes := merge(tc.static, nil, tc.sources)
			var names []string
			for _, t := range targets {
				names = append(names, t.Name)
			}
			if got := strings.Join(names, " "); got != tc.kept {
				t.Errorf("targets %q, want %q", got, tc.kept)
			}
			if !slices.Equal(clashes, tc.clashes) {
				t.Errorf("clashes %+v, want %+v", clashes, tc.clashes)
			}
			for _, c := range clashes {
				if c.group != "" && !strings.Contains(c.String(), "group") {
					t.Errorf("the log of %+v does not say a group is involved: %s", c, c)
				}
			}
			dropped := 0
			for _, s := range tc.sources {
				dropped += s.counts[dropNameClash]
			}
			if dropped != len(tc.clashes) {
				t.Errorf("%d dropped as name_clash, want %d", dropped, len(tc.clashes))
			}
		})
	}
}

// TestEvaluateRedactsUserinfo: a password in a discovered address or in
// any other label never shows in the report of the target or in the
// labels the view shows.
func TestEvaluateRedactsUserinfo(t *testing.T) {
	groups := []*targetgroup.Group{{Source: "f", Targets: []model.LabelSet{
		{"__address__": "alice:hunter2@127.0.0.1:28001"},
		{"__address__": "h:1", "__scheme__": "http://bob:s3cret@h", "origin": "https://carol:pa55@x/"},
		{"__address__": "h:2", "backend": "dave:letmein@h"},
	}}}
	s := evaluate("file", groups, relabelled(t, ""), nil)
	if len(dropped(s)) != 3 {
		t.Fatalf("dropped %d targets, want three", len(dropped(s)))
	}
	for _, r := range dropped(s) {
		shown := r.err + fmt.Sprint(r.view(groupLines{}).Labels)
		for _, secret := range []string{"hunter2", "s3cret", "pa55", "letmein"} {
			if strings.Contains(shown, secret) {
				t.Errorf("report %q shows the password %s", shown, secret)
			}
		}
		if !strings.Contains(r.err, "xxxxx") {
			t.Errorf("report %q does not show where the password was", r.err)
		}
	}
}

// dropped are the dropped targets every source of s keeps for the view.
func dropped(s *source) []*record {
	var out []*record
	for _, t := range s.tallies {
		out = append(out, t.dropped...)
	}
	return out
}

// TestEveryDiscoveryKeyHasAMechanism: every *_sd_configs field of the
// configuration has its row in mechanisms, so that a key added to the
// configuration without the mechanism that reads it fails here rather than
// being accepted by check-config and ignored at run time.
func TestEveryDiscoveryKeyHasAMechanism(t *testing.T) {
	rows := map[string]bool{}
	for _, m := range mechanisms {
		rows[m.key] = true
	}
	fields := reflect.TypeFor[config.Config]()
	keys := 0
	for i := range fields.NumField() {
		name, _, _ := strings.Cut(fields.Field(i).Tag.Get("yaml"), ",")
		if !strings.HasSuffix(name, "_sd_configs") {
			continue
		}
		keys++
		if !rows[name] {
			t.Errorf("configuration key %s has no row in mechanisms", name)
		}
	}
	if keys != len(mechanisms) {
		t.Errorf("%d *_sd_configs keys in the configuration, %d mechanisms", keys, len(mechanisms))
	}
}

// TestEveryMechanismIsADiscoveryBlock: each mechanism's key is a field of
// the configuration whose blocks the mechanism reads, and one that
// config.DiscoveryBlocks counts, so that check-config and start-up know
// that discovery may add backends without naming the mechanisms.
func TestEveryMechanismIsADiscoveryBlock(t *testing.T) {
	for _, m := range mechanisms {
		cfg := config.Default()
		v := reflect.ValueOf(cfg).Elem()
		set := false
		for i := range v.NumField() {
			if name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); name == m.key {
				f := v.Field(i)
				one := reflect.MakeSlice(f.Type(), 1, 1)
				one.Index(0).Set(reflect.New(f.Type().Elem().Elem()))
				f.Set(one)
				set = true
			}
		}
		if !set {
			t.Errorf("mechanism %s: the configuration has no key %s", m.name, m.key)
			continue
		}
		if got := cfg.DiscoveryBlocks(); len(got) != 1 || got[0].Key != m.key || got[0].Blocks != 1 || len(m.configs(cfg)) != 1 {
			t.Errorf("mechanism %s: DiscoveryBlocks %v and %d blocks read, want one %s block", m.name, got, len(m.configs(cfg)), m.key)
		}
	}
}
