package probe

import (
	"context"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
)

// TestGRPCOutOfDescriptorsJudgesNoBackend: a grpc probe whose dial fails
// with EMFILE (probegate out of file descriptors) counts as local and
// leaves a healthy backend healthy, as the http and tcp probes do: the
// probe's dialer keeps the dial's error as the result's Cause, which gRPC
// itself reports only as words.
func TestGRPCOutOfDescriptorsJudgesNoBackend(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "")
	t.Setenv("https_proxy", "")
	srv := startGRPC(t, standardHealth(), nil)
	cfg := newConfig(config.Backend{Name: "a", URL: srv})
	cfg.HealthProbe.Kind = config.KindGRPC
	p := newPool(t, cfg)
	b := p.Backends()[0]
	ctx := context.Background()
	healthy := newProbeTarget(b, newFunc)
	t.Cleanup(healthy.release)
	for range cfg.HealthProbe.Successes {
		b.RecordProbe(healthy.run(ctx, time.Now))
	}
	if st := b.Health().State; st != health.StateHealthy {
		t.Fatalf("before the fault the backend is %s, want healthy", st)
	}
	// A connection of its own, not dialled yet: its first probe dials.
	fresh := newProbeTarget(b, newFunc)
	t.Cleanup(fresh.release)

	var results []health.Result
	withoutDescriptors(t, func() {
		for range cfg.HealthProbe.Failures + 1 {
			results = append(results, fresh.run(ctx, time.Now))
		}
	})
	judgedNobody(t, b, results)
}
