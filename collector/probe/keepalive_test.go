package probe

import (
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// TestProbeKeepAlive: with keep_alive (the default) probes share one
// connection; with keep_alive false each probe opens a connection and
// closes it once answered, so none is left open between probes.
func TestProbeKeepAlive(t *testing.T) {
	t.Parallel()
	for _, keepAlive := range []bool{true, false} {
		srv := startServer(t, func(http.ResponseWriter, *http.Request) {})
		b := &pool.Backend{URL: srv.URL, Client: newClient(t), Probe: config.HealthProbe{
			Enabled: true, Timeout: model.Duration(time.Second), KeepAlive: new(keepAlive),
		}}
		target := newProbeTarget(b, newFunc)
		if target.release != nil {
			t.Cleanup(target.release)
		}
		const probes = 3
		for i := range probes {
			if r := target.run(t.Context(), time.Now); r.Class != health.ClassOK {
				t.Fatalf("keep_alive %v, probe %d: %+v", keepAlive, i, r)
			}
			if keepAlive {
				continue
			}
			// The client closes its end once the answer is read; the
			// server sees it within moments.
			await(t, "keep_alive false: the probe's connection closed", srv.changed, func() bool { return srv.closed.Load() == int64(i+1) })
		}
		want := int64(1)
		if !keepAlive {
			want = probes
		}
		if got := srv.connections.Load(); got != want {
			t.Errorf("keep_alive %v: %d probes came on %d connections, want %d", keepAlive, probes, got, want)
		}
	}
}
