package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/probegate/probegate/config/internal/yamlpos"
)

// TestProbeKeysAreHealthProbesFields: every field of HealthProbe is a
// health_probe key a backend can set, so a new key is one new field.
func TestProbeKeysAreHealthProbesFields(t *testing.T) {
	if got := yamlpos.Keys(reflect.TypeFor[HealthProbe]()); !slices.Equal(probeKeys, got) || len(probeKeys) != reflect.TypeFor[HealthProbe]().NumField() {
		t.Errorf("probeKeys = %v, want one per field of HealthProbe: %v", probeKeys, got)
	}
	if len(probeKeys) > 64 {
		t.Errorf("%d keys do not fit the set's 64 bits", len(probeKeys))
	}
	for _, key := range probeKeys {
		o := NewHealthProbeOverride(HealthProbe{}, key)
		for _, other := range probeKeys {
			if o.IsSet(other) != (other == key) {
				t.Errorf("setting %s: IsSet(%s) = %v", key, other, o.IsSet(other))
			}
		}
	}
}

// TestKindKeysNameKeysAndKinds: the kind-specific keys are health_probe
// keys and apply to probe kinds that exist.
func TestKindKeysNameKeysAndKinds(t *testing.T) {
	for _, k := range kindKeys {
		if !slices.Contains(probeKeys, k.key) {
			t.Errorf("kind key %q is not a health_probe key", k.key)
		}
		for _, kind := range k.kinds {
			if !slices.Contains(Kinds(), kind) {
				t.Errorf("kind key %q applies to %q, which is not a probe kind", k.key, kind)
			}
		}
		if !k.isDefault(Default().HealthProbe) {
			t.Errorf("kind key %q: the default configuration does not hold its default", k.key)
		}
	}
}

// TestHealthProbeOverrideRecordsTheKeysItHolds: a backend's block sets
// exactly the keys it holds, those merged in from an anchor included, and
// a key set to null sets nothing.
func TestHealthProbeOverrideRecordsTheKeysItHolds(t *testing.T) {
	data := `
x-common: &common {interval: 1s, timeout: 500ms, path: /merged}
backends:
  - name: own
    url: http://127.0.0.1:1
    health_probe: {path: /own, enabled: false, expect_body_regexp: "", timeout: null}
  - name: merged
    url: http://127.0.0.1:2
    health_probe:
      <<: *common
      path: /explicit
  - name: alias
    url: http://127.0.0.1:3
    health_probe: *common
`
	var c struct {
		Common   any       `yaml:"x-common"`
		Backends []Backend `yaml:"backends"`
	}
	if err := yaml.Unmarshal([]byte(data), &c); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		keys []string
		want HealthProbe
	}{
		{[]string{"enabled", "path", "expect_body_regexp"}, HealthProbe{Path: "/own"}},
		{[]string{"path", "interval", "timeout"}, HealthProbe{Path: "/explicit", Interval: seconds(1), Timeout: seconds(0.5)}},
		{[]string{"path", "interval", "timeout"}, HealthProbe{Path: "/merged", Interval: seconds(1), Timeout: seconds(0.5)}},
	}
	for i, b := range c.Backends {
		o := b.HealthProbe
		for _, key := range probeKeys {
			if o.IsSet(key) != slices.Contains(cases[i].keys, key) {
				t.Errorf("%s: IsSet(%s) = %v, want the keys %v set", b.Name, key, o.IsSet(key), cases[i].keys)
			}
		}
		if !reflect.DeepEqual(o.Values, cases[i].want) {
			t.Errorf("%s: values %+v, want %+v", b.Name, o.Values, cases[i].want)
		}
	}
}

// TestHealthProbeOverrideWritesTheKeysItSets: written out, a block holds
// the keys it sets and no other, a key set to its empty value included,
// and reads back the same.
func TestHealthProbeOverrideWritesTheKeysItSets(t *testing.T) {
	c, err := parse([]byte(`
health_probe: {expect_body_regexp: up, headers: {X-A: "1"}}
backends:
  - {name: clears, url: "http://127.0.0.1:1", health_probe: {expect_body_regexp: "", headers: {}, enabled: false}}
  - {name: none, url: "http://127.0.0.1:2"}
`), "probegate.yml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(c.Backends)
	if err != nil {
		t.Fatal(err)
	}
	want := `- name: clears
  url: http://127.0.0.1:1
  health_probe:
    enabled: false
    headers: {}
    expect_body_regexp: ""
- name: none
  url: http://127.0.0.1:2
`
	if string(out) != want {
		t.Errorf("marshalled:\n%s\nwant:\n%s", out, want)
	}
	var back []Backend
	if err := yaml.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back[0].HealthProbe, c.Backends[0].HealthProbe) {
		t.Errorf("read back %+v, want %+v", back[0].HealthProbe, c.Backends[0].HealthProbe)
	}
	if p := c.ProbeFor(back[0]); p.ExpectBodyRegexp != "" || len(p.Headers) != 0 || p.Enabled {
		t.Errorf("read back, the backend's probe is %+v, want the top-level regexp and headers cleared and probing off", p)
	}
}

func TestHealthProbeOverrideSetPanicsOnAnUnknownKey(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"intervall"`) {
			t.Errorf("recovered %v, want a panic naming the key", r)
		}
	}()
	NewHealthProbeOverride(HealthProbe{}, "intervall")
}
