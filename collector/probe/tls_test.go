package probe

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testpki"
)

// TestCertExpiryIsTheEarliestOfTheChain: whichever certificate of the
// chain expires first ends its validity, the leaf or not.
func TestCertExpiryIsTheEarliestOfTheChain(t *testing.T) {
	at := func(days int) *x509.Certificate {
		return &x509.Certificate{NotAfter: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, days)}
	}
	cases := []struct {
		name  string
		state *tls.ConnectionState
		want  time.Time
	}{
		{"no TLS", nil, time.Time{}},
		{"no certificates", &tls.ConnectionState{}, time.Time{}},
		{"the leaf first", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{at(10), at(300), at(3000)}}, at(10).NotAfter},
		{"an intermediate first", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{at(90), at(5), at(3000)}}, at(5).NotAfter},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := certExpiry(tc.state); !got.Equal(tc.want) {
				t.Errorf("certExpiry = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestProbesReportTheCertificateExpiry probes real loopback servers: over
// TLS, HTTP and gRPC probes carry the NotAfter of the server's
// certificate, whatever the class of the answer; in plaintext nothing.
func TestProbesReportTheCertificateExpiry(t *testing.T) {
	pki := testpki.New(t)
	leaf, err := x509.ParseCertificate(pki.Server.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	trustCA := config.HTTPClientConfig{TLSConfig: commoncfg.TLSConfig{CAFile: pki.CAFile}}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/unhealthy" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	overTLS := httptest.NewUnstartedServer(handler)
	overTLS.TLS = &tls.Config{Certificates: []tls.Certificate{pki.Server}}
	overTLS.StartTLS()
	t.Cleanup(overTLS.Close)
	plain := httptest.NewServer(handler)
	t.Cleanup(plain.Close)
	grpcOverTLS := startGRPC(t, standardHealth(), &pki.Server)

	path := func(p string) func(*config.HealthProbe) {
		return func(hp *config.HealthProbe) { hp.Path = p }
	}
	cases := []struct {
		name   string
		url    string
		set    func(*config.HealthProbe)
		class  health.Class
		expiry time.Time
	}{
		{"http over TLS, ok", overTLS.URL, path("/healthz"), health.ClassOK, leaf.NotAfter},
		{"http over TLS, 503", overTLS.URL, path("/unhealthy"), health.ClassFailed, leaf.NotAfter},
		{"grpc over TLS", grpcOverTLS, grpcKind(""), health.ClassOK, leaf.NotAfter},
		{"http in plaintext", plain.URL, path("/healthz"), health.ClassOK, time.Time{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runTarget(newTarget(t, tc.url, tc.set, trustCA))
			if r.Class != tc.class || !r.TLSCertExpiry.Equal(tc.expiry) {
				t.Errorf("got class %v, certificate expiry %v (err %q); want %v, %v", r.Class, r.TLSCertExpiry, r.Err, tc.class, tc.expiry)
			}
		})
	}
}

// TestProbeResumesTLSSessions: a probe that owns its connection and opens
// one per probe (keep_alive false) resumes the TLS session of the last
// one instead of a full handshake each time.
func TestProbeResumesTLSSessions(t *testing.T) {
	pki := testpki.New(t)
	var resumed atomic.Int64
	srv := hostileServeTLS(t, &tls.Config{Certificates: []tls.Certificate{pki.Server}}, func(c *hostileConn) {
		if !c.readRequest() {
			return
		}
		// Counted before the answer, which the probe waits for.
		if c.Conn.(*tls.Conn).ConnectionState().DidResume {
			resumed.Add(1)
		}
		c.write(empty200)
	})
	cc := trustTestCA(pki)
	cfg := newConfig(config.Backend{Name: "b", URL: srv.URL, HTTPClientConfig: &cc})
	cfg.HealthProbe.KeepAlive = new(false)
	target := releasedTarget(t, newProbeTarget(newPool(t, cfg).Backends()[0], buildOn(probePaths()[0])))
	const probes = 3
	for i := range probes {
		if r := target.run(t.Context(), time.Now); r.Class != health.ClassOK {
			t.Fatalf("probe %d: %+v", i+1, r)
		}
	}
	if n := srv.Conns.Load(); n != probes {
		t.Errorf("%d probes took %d connections, want one each", probes, n)
	}
	if n := resumed.Load(); n != probes-1 {
		t.Errorf("%d of the %d probes after the first resumed the TLS session, want all", n, probes-1)
	}
}
