package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/version"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
)

// newGRPC builds the grpc probe of a backend: grpc.health.v1.Health/Check
// of the configured service on the host and port of its url, in plaintext
// for an http:// url and over TLS (the backend's
// http_client_config.tls_config) for an https:// one. The connection is
// made once and kept across probes; the returned release closes it, and
// the Prober calls it once the backend is no longer probed with it.
//
// gRPC keeps reconnecting a broken connection on its own with a backoff,
// and a probe while it waits fails at once with the last connection
// error. The backoff is capped at the probe interval, and a probe that
// finds the connection broken wakes it up for the next one, so a
// restarted backend is seen again within about an interval.
func newGRPC(b *pool.Backend) (Func, func(), error) {
	addr, err := probeAddr(b.URL)
	if err != nil {
		return nil, nil, err
	}
	creds := insecure.NewCredentials()
	overTLS := false
	if u, _ := url.Parse(b.URL); u.Scheme == "https" {
		overTLS = true
		cc := b.ClientConfig()
		tlsConfig, err := commoncfg.NewTLSConfig(&cc.TLSConfig)
		if err != nil {
			return nil, nil, fmt.Errorf("tls_config: %w", err)
		}
		creds = credentials.NewTLS(tlsConfig)
	}
	interval := probeInterval(b)
	timeout := time.Duration(b.Probe.Timeout)
	options := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithUserAgent("probegate/" + version.Version),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: min(time.Second, interval), Multiplier: 1.6, Jitter: 0.2, MaxDelay: interval},
			MinConnectTimeout: max(timeout, time.Second),
		}),
	}
	dials := &grpcDials{}
	if !grpcProxied(addr) {
		options = append(options, grpc.WithContextDialer(dials.dial))
	}
	conn, err := grpc.NewClient("passthrough:///"+addr, options...)
	if err != nil {
		return nil, nil, fmt.Errorf("grpc client: %w", err)
	}
	client := healthpb.NewHealthClient(conn)
	req := &healthpb.HealthCheckRequest{Service: b.Probe.GRPCService}
	probe := func(ctx context.Context) health.Result {
		if conn.GetState() == connectivity.TransientFailure {
			// This probe reports the failure gRPC last saw; the next one
			// sees a fresh attempt instead of one a whole backoff old.
			defer conn.ResetConnectBackoff()
		}
		if !overTLS {
			return dials.withCause(grpcCheck(ctx, client, req, timeout))
		}
		// The peer tells which certificates the connection presented; a
		// plaintext probe does without the option it costs.
		var p peer.Peer
		r := grpcCheck(ctx, client, req, timeout, grpc.Peer(&p))
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok {
			r.TLSCertExpiry = certExpiry(&info.State)
		}
		return dials.withCause(r)
	}
	return probe, func() { conn.Close() }, nil
}

// grpcProxied reports whether gRPC would reach addr through a proxy of
// the environment (HTTPS_PROXY, NO_PROXY), as it decides it. gRPC connects
// through one only with its own dialer, so such a backend keeps it, and
// its probes then go without the cause of a failed dial (below).
func grpcProxied(addr string) bool {
	proxy, err := http.ProxyFromEnvironment(&http.Request{URL: &url.URL{Scheme: "https", Host: addr}})
	return err == nil && proxy != nil
}

// grpcDials is the dialer of a gRPC probe's connection, which keeps the
// error of its last dial: gRPC reports a failed dial to the call only as
// a message, and the probe needs the error itself as the result's Cause,
// so that a failure of probegate's own (out of descriptors, say) is told
// from the backend's (health.LocalCause).
type grpcDials struct {
	last atomic.Pointer[error]
}

// dial connects as gRPC's own dialer does, with TCP keepalives at the
// system's settings, and keeps the outcome.
func (d *grpcDials) dial(ctx context.Context, addr string) (net.Conn, error) {
	dialer := net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: -1, Interval: -1, Count: -1}}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		d.last.Store(&err)
	} else {
		d.last.Store(nil)
	}
	return conn, err
}

// withCause gives a transport failure the error of the last dial as its
// Cause, when that dial failed: gRPC fails a call on a connection it
// cannot make with that dial's error.
func (d *grpcDials) withCause(r health.Result) health.Result {
	if r.Reason != health.ReasonTransport {
		return r
	}
	if err := d.last.Load(); err != nil {
		r.Cause = *err
	}
	return r
}

// grpcCheck sends one health check and classifies its outcome.
func grpcCheck(ctx context.Context, client healthpb.HealthClient, req *healthpb.HealthCheckRequest, timeout time.Duration, opts ...grpc.CallOption) health.Result {
	resp, err := client.Check(ctx, req, opts...)
	if err != nil {
		return grpcErrorResult(ctx, err, timeout)
	}
	return grpcResult(resp.GetStatus().String())
}

// grpcErrorResult classifies a failed health check. UNIMPLEMENTED (the
// server has no health service) and NOT_FOUND (it does not know the
// service name) are answers that refuse the probe, as an HTTP 404 does;
// a deadline is a timeout; any other code is a transport failure.
func grpcErrorResult(ctx context.Context, err error, timeout time.Duration) health.Result {
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Unimplemented:
		return grpcResult(statusUnimplemented)
	case codes.NotFound:
		return grpcResult(statusNotFound)
	}
	if st.Code() == codes.DeadlineExceeded || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return health.TimeoutResult(fmt.Sprintf("no answer within the probe timeout of %s: %s", timeout, st.Message()))
	}
	return health.TransportResult(fmt.Sprintf("%s: %s", st.Code(), st.Message()))
}

// The answers of a gRPC health check as Result.Status holds them: the
// names of grpc.health.v1 statuses and of gRPC codes as the gRPC
// specification spells them.
const (
	statusServing        = "SERVING"
	statusNotServing     = "NOT_SERVING"
	statusUnknown        = "UNKNOWN"
	statusServiceUnknown = "SERVICE_UNKNOWN"
	// statusUnimplemented is the code of a server without the health
	// service.
	statusUnimplemented = "UNIMPLEMENTED"
	// statusNotFound is the code of a health check asking about a service
	// the server does not know.
	statusNotFound = "NOT_FOUND"
)

// grpcResult classifies what a gRPC server answered a health check with:
// the health status, or the gRPC code of the error it returned instead.
// SERVING is ok. NOT_SERVING, UNKNOWN and any other status are failed
// with reason grpc_not_serving. UNIMPLEMENTED (no health service),
// NOT_FOUND and SERVICE_UNKNOWN (no such service name) are refused: like
// an HTTP 404 they say the probe asks the wrong question, not that the
// backend is down. All of them are answered. Other gRPC codes are not
// answers but transport failures, which grpcErrorResult classifies.
func grpcResult(status string) health.Result {
	switch status {
	case statusServing:
		return health.Result{Class: health.ClassOK, Status: status}
	case statusUnimplemented, statusNotFound, statusServiceUnknown:
		return health.Result{Class: health.ClassRefused, Status: status}
	}
	return health.Result{Class: health.ClassFailed, Reason: health.ReasonGRPCNotServing, Status: status,
		Err: "the health service answered " + status}
}

// grpcAnswers are the answers simulatedGRPC takes.
const grpcAnswers = "SERVING, NOT_SERVING, UNKNOWN, UNIMPLEMENTED, NOT_FOUND, SERVICE_UNKNOWN, DEADLINE_EXCEEDED, " +
	"UNAVAILABLE or another gRPC code name"

// simulatedGRPCFailures are the gRPC codes a simulated grpc probe may name
// besides those grpcResult classifies: the codes that are no answer of the
// health service but a failure to reach it.
var simulatedGRPCFailures = []string{
	"CANCELLED", "INVALID_ARGUMENT", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

// simulatedGRPC is the result of a grpc probe answered as `probegate
// simulate` names it, in any case.
func simulatedGRPC(answer string) (health.Result, bool) {
	switch answer = strings.ToUpper(answer); answer {
	case statusServing, statusNotServing, statusUnknown, statusUnimplemented, statusNotFound, statusServiceUnknown:
		return grpcResult(answer), true
	case "DEADLINE_EXCEEDED":
		return health.TimeoutResult("simulated DEADLINE_EXCEEDED"), true
	}
	if slices.Contains(simulatedGRPCFailures, answer) {
		return health.TransportResult("simulated " + answer), true
	}
	return health.Result{}, false
}
