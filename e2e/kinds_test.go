package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestProbeKinds runs the binary against a grpc-go server whose health
// service flips to NOT_SERVING, a grpc-go server without the health
// service, a plain listener probed over tcp, and an HTTP backend whose
// body does not match: each ends where its kind's classes put it.
func TestProbeKinds(t *testing.T) {
	h := grpchealth.NewServer()
	serving := grpcServe(t, h)
	noHealth := grpcServe(t, nil)
	web := okBackend(t)

	cfg := fmt.Sprintf(`health_probe: {interval: 200ms, timeout: 100ms}
backends:
  - {name: grpc, url: "http://%s", health_probe: {kind: grpc}}
  - {name: grpc-no-health, url: "http://%s", health_probe: {kind: grpc}}
  - {name: tcp, url: %q, health_probe: {kind: tcp}}
  - {name: body, url: %q, health_probe: {expect_body_regexp: "^ready"}}
`, serving, noHealth, web.URL, web.URL)
	path := filepath.Join(t.TempDir(), "probegate.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProbegate(t, "--config.file="+path)
	state := func(name string) string { return getHealthz(t, p.base)[name].State }
	want := map[string]string{"grpc": "healthy", "grpc-no-health": "probe_unsupported", "tcp": "healthy", "body": "unhealthy"}
	waitFor(t, 10*time.Second, "every kind in its state", func() bool {
		for name, s := range want {
			if state(name) != s {
				return false
			}
		}
		return true
	})
	if v := metricValue(t, p.base, `probegate_probe_failures_total{backend="body",reason="body_mismatch"}`); v < 3 {
		t.Errorf("body_mismatch failures = %v, want at least 3", v)
	}

	h.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	waitFor(t, 10*time.Second, "the NOT_SERVING grpc backend out of service", func() bool { return state("grpc") == "unhealthy" })
	if v := metricValue(t, p.base, `probegate_probe_failures_total{backend="grpc",reason="grpc_not_serving"}`); v < 3 {
		t.Errorf("grpc_not_serving failures = %v, want at least 3", v)
	}
}

// grpcServe serves a grpc-go server on loopback with the health service h
// (none when nil) until the test ends and returns its address.
func grpcServe(t *testing.T, h *grpchealth.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	if h != nil {
		healthpb.RegisterHealthServer(srv, h)
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(lis) })
	t.Cleanup(func() {
		srv.Stop()
		wg.Wait()
	})
	return lis.Addr().String()
}
