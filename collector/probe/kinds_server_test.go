package probe

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
)

// newTarget builds the probe target of one backend at url with the
// probe settings changed by set, through the pool as probegate builds it.
// Whatever the probe holds is released when the test ends.
func newTarget(t *testing.T, url string, set func(*config.HealthProbe), cc config.HTTPClientConfig) *probeTarget {
	t.Helper()
	cfg := newConfig(config.Backend{Name: "b", URL: url, HTTPClientConfig: &cc})
	cfg.HealthProbe.Timeout = model.Duration(500 * time.Millisecond)
	cfg.HealthProbe.Kind, cfg.HealthProbe.Method = config.KindHTTP, http.MethodGet
	if set != nil {
		set(&cfg.HealthProbe)
	}
	target := newProbeTarget(newPool(t, cfg).Backends()[0], newFunc)
	if target.buildErr != nil {
		t.Fatalf("building the probe: %v", target.buildErr)
	}
	if target.release != nil {
		t.Cleanup(target.release)
	}
	return target
}

// runTarget sends one probe of the target as the Prober does.
func runTarget(target *probeTarget) health.Result {
	return target.run(context.Background(), time.Now)
}

// startGRPC starts a real gRPC server on loopback with the given
// health service (none when nil), over TLS when cert is given. It returns
// the server's backend URL. opts are further server options.
func startGRPC(t *testing.T, healthServer healthpb.HealthServer, cert *tls.Certificate, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scheme := "http://"
	if cert != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{*cert}})))
		scheme = "https://"
	}
	srv := grpc.NewServer(opts...)
	if healthServer != nil {
		healthpb.RegisterHealthServer(srv, healthServer)
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(lis) })
	t.Cleanup(func() {
		srv.Stop()
		wg.Wait()
	})
	return scheme + lis.Addr().String()
}

// standardHealth is grpc-go's own health service.
func standardHealth() *grpchealth.Server {
	h := grpchealth.NewServer()
	h.SetServingStatus("pdb.v1.Query", healthpb.HealthCheckResponse_SERVING)
	return h
}

// scriptedHealth is a health service whose next answer the test sets:
// a health status, or a gRPC error code, or "hang" (no answer until the
// client gives up).
type scriptedHealth struct {
	healthpb.UnimplementedHealthServer
	mu     sync.Mutex
	answer string
}

func (s *scriptedHealth) set(answer string) {
	s.mu.Lock()
	s.answer = answer
	s.mu.Unlock()
}

func (s *scriptedHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s.mu.Lock()
	answer := s.answer
	s.mu.Unlock()
	switch answer {
	case "SERVING":
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case "NOT_SERVING":
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}, nil
	case "UNIMPLEMENTED":
		return nil, status.Error(codes.Unimplemented, "no health service")
	case "NOT_FOUND":
		return nil, status.Error(codes.NotFound, "unknown service")
	case "hang":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, status.Errorf(codes.Internal, "the test set no answer %q", answer)
}
