package config

import (
	"maps"
	"testing"
)

func TestProbeForKindKeys(t *testing.T) {
	data := `
health_probe:
  method: HEAD
  headers: {Host: pdb.example, X-Probe: "1"}
backends:
  - name: inherits
    url: http://127.0.0.1:8081
  - name: own-headers
    url: http://127.0.0.1:8082
    health_probe:
      method: GET
      headers: {X-Other: "2"}
      expect_body_regexp: '"status":\s*"up"'
  - name: grpc
    url: https://127.0.0.1:8083
    health_probe: {kind: grpc, grpc_service: pdb.v1.Query}
  - name: tcp
    url: http://127.0.0.1:8084
    health_probe: {kind: tcp}
`
	c, err := parse([]byte(data), "probegate.yml")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	got := make(map[string]HealthProbe, len(c.Backends))
	for _, b := range c.Backends {
		got[b.Name] = c.ProbeFor(b)
	}
	if p := got["inherits"]; p.Kind != KindHTTP || p.Method != "HEAD" || !maps.Equal(p.Headers, map[string]string{"Host": "pdb.example", "X-Probe": "1"}) {
		t.Errorf("inherits = %+v, want the top-level http HEAD with both headers", p)
	}
	// A backend's headers replace the top-level ones as a whole.
	if p := got["own-headers"]; p.Method != "GET" || !maps.Equal(p.Headers, map[string]string{"X-Other": "2"}) || p.ExpectBodyRegexp != `"status":\s*"up"` {
		t.Errorf("own-headers = %+v, want GET with its own header only and the regexp", p)
	}
	if p := got["grpc"]; p.Kind != KindGRPC || p.GRPCService != "pdb.v1.Query" {
		t.Errorf("grpc = %+v, want kind grpc asking about pdb.v1.Query", p)
	}
	if p := got["tcp"]; p.Kind != KindTCP {
		t.Errorf("tcp = %+v, want kind tcp", p)
	}
}

func TestHealthProbeEqual(t *testing.T) {
	base := Default().HealthProbe
	base.Headers = map[string]string{"Host": "a"}
	same := base
	same.Headers = map[string]string{"Host": "a"}
	if !base.Equal(same) {
		t.Errorf("equal settings with distinct maps are not Equal")
	}
	if empty, none := (HealthProbe{Headers: map[string]string{}}), (HealthProbe{}); !empty.Equal(none) {
		t.Errorf("an empty headers map differs from none")
	}
	changes := map[string]func(*HealthProbe){
		"header value": func(p *HealthProbe) { p.Headers = map[string]string{"Host": "b"} },
		"header added": func(p *HealthProbe) { p.Headers = map[string]string{"Host": "a", "X": "y"} },
		"kind":         func(p *HealthProbe) { p.Kind = KindTCP },
		"method":       func(p *HealthProbe) { p.Method = "HEAD" },
		"regexp":       func(p *HealthProbe) { p.ExpectBodyRegexp = "up" },
		"grpc service": func(p *HealthProbe) { p.GRPCService = "x" },
		"keep_alive":   func(p *HealthProbe) { p.KeepAlive = new(false) },
		"path":         func(p *HealthProbe) { p.Path = "/ready" },
	}
	for name, change := range changes {
		other := base
		change(&other)
		if base.Equal(other) {
			t.Errorf("a changed %s is still Equal", name)
		}
	}
}

// TestProbeForKeepAlive: keep_alive is true unless set, set at the top
// level or per backend, the backend's own value winning; unset and true
// are the same settings.
func TestProbeForKeepAlive(t *testing.T) {
	data := `
health_probe:
  keep_alive: false
backends:
  - name: inherits
    url: http://127.0.0.1:8081
  - name: keeps
    url: http://127.0.0.1:8082
    health_probe: {keep_alive: true}
`
	c, err := parse([]byte(data), "probegate.yml")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if p := c.ProbeFor(c.Backends[0]); p.KeepsAlive() {
		t.Errorf("inherits keeps connections alive, want the top-level keep_alive: false")
	}
	if p := c.ProbeFor(c.Backends[1]); !p.KeepsAlive() {
		t.Errorf("keeps does not keep connections alive, want its own keep_alive: true")
	}
	if !Default().HealthProbe.KeepsAlive() || !(HealthProbe{}).KeepsAlive() {
		t.Errorf("keep_alive is false by default, want true")
	}
	if unset, set := (HealthProbe{}), (HealthProbe{KeepAlive: new(true)}); !unset.Equal(set) {
		t.Errorf("keep_alive unset differs from keep_alive: true")
	}
}
