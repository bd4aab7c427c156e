package config

import (
	"reflect"
	"testing"

	commoncfg "github.com/prometheus/common/config"
)

func TestProbeForMergesTheBackendOverride(t *testing.T) {
	data := `
health_probe:
  path: /healthz
  interval: 10s
  timeout: 3s
  failures: 4
  successes: 3
backends:
  - name: inherits
    url: http://127.0.0.1:1
  - name: path-only
    url: http://127.0.0.1:2
    health_probe:
      path: /status
  - name: everything
    url: http://127.0.0.1:3
    health_probe:
      enabled: false
      path: /ping
      interval: 1s
      timeout: 500ms
      failures: 1
      successes: 5
  - name: explicit-nulls
    url: http://127.0.0.1:4
    health_probe:
      path: null
      timeout: ~
`
	c, err := parse([]byte(data), "probegate.yml")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	top := HealthProbe{Enabled: true, Path: "/healthz", Interval: seconds(10), Timeout: seconds(3), Failures: 4, Successes: 3, Kind: "http", Method: "GET"}
	pathOnly := top
	pathOnly.Path = "/status"
	want := []HealthProbe{
		top,
		pathOnly,
		{Enabled: false, Path: "/ping", Interval: seconds(1), Timeout: seconds(0.5), Failures: 1, Successes: 5, Kind: "http", Method: "GET"},
		top,
	}
	for i, b := range c.Backends {
		if got := c.ProbeFor(b); !got.Equal(want[i]) {
			t.Errorf("ProbeFor(%s) = %+v, want %+v", b.Name, got, want[i])
		}
	}
	if !c.HealthProbe.Equal(top) {
		t.Errorf("an override changed the top-level block: %+v", c.HealthProbe)
	}
}

func TestClientConfigForReplacesTheTopLevelBlock(t *testing.T) {
	data := `
http_client_config:
  bearer_token_file: /etc/token
backends:
  - name: inherits
    url: http://127.0.0.1:1
  - name: own
    url: http://127.0.0.1:2
    http_client_config:
      enable_http2: false
  - name: empty
    url: http://127.0.0.1:3
    http_client_config: {}
`
	c, err := parse([]byte(data), "/etc/probegate/probegate.yml")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	// prometheus/common turns bearer_token_file into an authorization block.
	if got := c.ClientConfigFor(c.Backends[0]); got.Authorization == nil || got.Authorization.CredentialsFile != "/etc/token" {
		t.Errorf("inheriting backend got %+v, want the top-level block", got)
	}
	want := commoncfg.DefaultHTTPClientConfig
	want.EnableHTTP2 = false
	if got := c.ClientConfigFor(c.Backends[1]); !reflect.DeepEqual(got, want) {
		t.Errorf("backend with its own block got %+v, want %+v (replaced, not merged)", got, want)
	}
	if got := c.ClientConfigFor(c.Backends[2]); got.Authorization == nil || got.Authorization.CredentialsFile != "/etc/token" {
		t.Errorf("backend with an empty block got %+v, want the top-level block inherited", got)
	}
}
