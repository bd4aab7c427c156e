//go:build linux

package probe

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// TestProbeDialEndsByTheDeadlineOrTheCancellation: the owned connection's
// dial to an IP address that never accepts ends at the probe's deadline as
// a timeout, whatever the context it runs under, and at once when the
// prober stops.
func TestProbeDialEndsByTheDeadlineOrTheCancellation(t *testing.T) {
	url := fullBacklogURL(t)
	// ended bounds a probe that should end well within it.
	const ended = 3 * time.Second
	runBounded := func(t *testing.T, ctx context.Context, target *probeTarget) health.Result {
		t.Helper()
		result := make(chan health.Result, 1)
		go func() { result <- target.run(ctx, time.Now) }()
		select {
		case r := <-result:
			return r
		case <-time.After(ended):
			t.Fatalf("the probe was still dialling after %v", ended)
			return health.Result{}
		}
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{
		{"a context that can end", t.Context()},
		{"a context that never ends", context.Background()},
	} {
		t.Run("deadline, "+c.name, func(t *testing.T) {
			const timeout = 100 * time.Millisecond
			target := httpTarget(t, newClient(t), url+"/healthz", timeout, probePath{name: "own connection"})
			r := runBounded(t, c.ctx, target)
			if r.Class != health.ClassFailed || r.Reason != health.ReasonTimeout {
				t.Errorf("probe: %+v, want a timeout", r)
			}
			if r.Duration < timeout {
				t.Errorf("the probe ended after %v, before its timeout of %v", r.Duration, timeout)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		target := httpTarget(t, newClient(t), url+"/healthz", time.Minute, probePath{name: "own connection"})
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		r := runBounded(t, ctx, target)
		if r.Class == health.ClassOK || !strings.Contains(r.Err, "canceled") {
			t.Errorf("probe: %+v, want the cancellation", r)
		}
	})
}
