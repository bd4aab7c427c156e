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
	for _, keepAlive := range []bool{true, false} {
		srv := probeTestServe(t, func(http.ResponseWriter, *http.Request) {})
		b := &pool.Backend{URL: srv.URL, Client: testClient(t), Probe: config.HealthProbe{
			Enabled: true, Timeout: model.Duration(time.Second), KeepAlive: new(keepAlive),
		}}
		target := newProbeTarget(b, newFunc)
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
			for deadline := time.Now().Add(2 * time.Second); srv.closed.Load() < int64(i+1) && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if closed := srv.closed.Load(); closed != int64(i+1) {
				t.Fatalf("keep_alive false: %d connections closed after probe %d, want %d", closed, i, i+1)
			}
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
