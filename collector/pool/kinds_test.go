package pool

import (
	"testing"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
)

// TestApplyResetsBackendsWhoseProbeKindSettingsChange: every probe key
// is part of a backend's identity, the headers map included, while equal
// headers in a fresh map (a reload decodes a new one) keep the state.
func TestApplyResetsBackendsWhoseProbeKindSettingsChange(t *testing.T) {
	changes := map[string]func(*config.HealthProbe){
		"same headers in a new map": func(p *config.HealthProbe) { p.Headers = map[string]string{"Host": "a"} },
		"header value":              func(p *config.HealthProbe) { p.Headers = map[string]string{"Host": "b"} },
		"kind":                      func(p *config.HealthProbe) { p.Kind = config.KindTCP },
		"method":                    func(p *config.HealthProbe) { p.Method = "HEAD" },
		"body regexp":               func(p *config.HealthProbe) { p.ExpectBodyRegexp = "up" },
		"grpc service":              func(p *config.HealthProbe) { p.GRPCService = "pdb" },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			targets := numberedTargets(1)
			targets[0].Probe.Headers = map[string]string{"Host": "a"}
			p := newPool(t, targets, Settings{})
			feed(p.Backends()[0], health.StatusResult(200), 1)

			next := numberedTargets(1)
			next[0].Probe.Headers = map[string]string{"Host": "a"}
			change(&next[0].Probe)
			if err := p.Apply(next, Settings{}); err != nil {
				t.Fatal(err)
			}
			want := health.StateUnknown
			if name == "same headers in a new map" {
				want = health.StateHealthy
			}
			if got := p.Backends()[0].Health().State; got != want {
				t.Errorf("after the reload the backend is %v, want %v", got, want)
			}
		})
	}
}
