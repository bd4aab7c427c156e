package discovery

import (
	"testing"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/config"
)

// TestStaticKeepsOrderAndAppliesOverrides: the file's backends become
// targets in their order, each with its effective probe settings (a
// backend's own keys over the top level) and client configuration (its own
// block replacing the top-level one as a whole).
func TestStaticKeepsOrderAndAppliesOverrides(t *testing.T) {
	own := config.HTTPClientConfig{BearerToken: "t0ken"}
	cfg := config.Default()
	cfg.HTTPClientConfig = config.HTTPClientConfig{BasicAuth: &commoncfg.BasicAuth{Username: "u", Password: "p"}}
	cfg.Backends = []config.Backend{
		{Name: "z", URL: "http://127.0.0.1:1", Group: "s1"},
		{Name: "a", URL: "http://127.0.0.1:2/", HealthProbe: config.NewHealthProbeOverride(config.HealthProbe{Path: "/status"}, "path"), HTTPClientConfig: &own},
	}
	targets := Static(cfg)
	if len(targets) != 2 || targets[0].Name != "z" || targets[1].Name != "a" {
		t.Fatalf("targets %+v, want z then a", targets)
	}
	if targets[0].Probe.Path != "/healthz" || targets[1].Probe.Path != "/status" || targets[1].Probe.Interval != cfg.HealthProbe.Interval {
		t.Errorf("probe settings %+v / %+v, want the default path, then /status with the top-level interval", targets[0].Probe, targets[1].Probe)
	}
	if targets[0].ClientConfig.BasicAuth == nil || targets[1].ClientConfig.BasicAuth != nil || targets[1].ClientConfig.BearerToken != "t0ken" {
		t.Errorf("client configs %+v / %+v, want the top-level one, then the backend's own whole", targets[0].ClientConfig, targets[1].ClientConfig)
	}
	if targets[0].Group != "s1" || targets[1].Group != "" {
		t.Errorf("groups %q, %q; want s1, then none", targets[0].Group, targets[1].Group)
	}
	if targets[1].URL != "http://127.0.0.1:2/" {
		t.Errorf("url %q changed; the pool trims it", targets[1].URL)
	}
}
