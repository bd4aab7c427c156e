package probe

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/deadport"
	"github.com/probegate/probegate/internal/silentport"
)

// TestKindRowsAreWhatTheirProbesReturn: each kind's row of the table
// lists exactly the failure reasons its real probe returns, matching the
// body or not. Every kind probes the same hostile loopback backends (an
// HTTP 503, 429 and wrong body, a gRPC NOT_SERVING, a refused
// connection, a server that never speaks, a queue that never accepts),
// and the reasons it fails for must be its row: body_mismatch only for an
// http probe that matches the body, grpc_not_serving only for grpc. The
// exporter pre-initialises its series from these rows.
func TestKindRowsAreWhatTheirProbesReturn(t *testing.T) {
	web := startServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/503":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/429":
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.Write([]byte("down"))
		}
	})
	notServing := standardHealth()
	notServing.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	backends := []struct{ name, url, path string }{
		{"503", web.URL, "/503"},
		{"429", web.URL, "/429"},
		{"wrong body", web.URL, "/healthz"},
		{"gRPC NOT_SERVING", startGRPC(t, notServing, nil), "/healthz"},
		{"refused", deadport.URL(t), "/healthz"},
		{"never speaks", "http://" + silentport.Listen(t), "/healthz"},
		{"never accepts", fullBacklogURL(t), "/healthz"},
	}
	for _, kind := range config.Kinds() {
		for _, matchesBody := range []bool{false, true} {
			var seen []health.Reason
			for _, b := range backends {
				r := runTarget(newTarget(t, b.url, func(p *config.HealthProbe) {
					p.Kind, p.Path, p.Timeout = kind, b.path, model.Duration(300*time.Millisecond)
					if matchesBody {
						p.ExpectBodyRegexp = "^up$"
					}
				}, config.HTTPClientConfig{}))
				if r.Class == health.ClassFailed && !slices.Contains(seen, r.Reason) {
					seen = append(seen, r.Reason)
				}
			}
			slices.Sort(seen)
			row := slices.Sorted(slices.Values(KindFailureReasons(kind, matchesBody)))
			if !slices.Equal(seen, row) {
				t.Errorf("kind %s, matching the body %v: its probes failed for %v, its row lists %v", kind, matchesBody, seen, row)
			}
		}
	}
}
