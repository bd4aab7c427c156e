package collector

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/collector/internal/httpprobe"
	"github.com/probegate/probegate/config"
)

// grantTypeJWTBearer is the OAuth2 grant type whose credential is a client
// certificate key rather than a client secret (prometheus/common keeps its
// name unexported).
const grantTypeJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// NewHTTPClient builds the client a backend's probes and fan-out requests
// use from its http_client_config: TLS (reloading changed CA, certificate
// and key files as Prometheus does), basic auth, authorization, OAuth2,
// headers and proxy all apply. Redirects are never followed: a probe
// classifies the redirect itself, and a fan-out relays what the backend said.
//
// The client is prometheus/common's with one change below the
// authentication layers: probes (requests made through Probe or
// ProbeRequest) go through httpprobe's transport, which keeps an idle
// backend down to one connection and no goroutine, while every other
// request, and probes through a proxy, go through net/http's Transport.
// The dial tracing and per-client connection metrics prometheus/common
// adds are left out: they cost about as much memory per backend as the
// rest of the backend together. That is also why name, which labelled
// those metrics, is unused.
func NewHTTPClient(_ string, hc config.HTTPClientConfig) (*http.Client, error) {
	rt, err := newRoundTripper(context.Background(), hc)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Transport:     rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// newRoundTripper follows commoncfg.NewRoundTripperFromConfigWithContext
// layer by layer, with a splitTransport where it has an *http.Transport.
func newRoundTripper(ctx context.Context, cfg config.HTTPClientConfig) (http.RoundTripper, error) {
	tlsConfig, err := commoncfg.NewTLSConfigWithContext(ctx, &cfg.TLSConfig)
	if err != nil {
		return nil, err
	}
	proxy := cfg.Proxy()
	newRT := func(tlsConfig *tls.Config) (http.RoundTripper, error) {
		return withAuthentication(cfg, newSplitTransport(cfg, tlsConfig, proxy))
	}
	ca, err := secretOf(commoncfg.Secret(cfg.TLSConfig.CA), cfg.TLSConfig.CAFile, cfg.TLSConfig.CARef)
	if err != nil {
		return nil, err
	}
	cert, err := secretOf(commoncfg.Secret(cfg.TLSConfig.Cert), cfg.TLSConfig.CertFile, cfg.TLSConfig.CertRef)
	if err != nil {
		return nil, err
	}
	key, err := secretOf(cfg.TLSConfig.Key, cfg.TLSConfig.KeyFile, cfg.TLSConfig.KeyRef)
	if err != nil {
		return nil, err
	}
	if immutable(ca) && immutable(cert) && immutable(key) {
		return newRT(tlsConfig)
	}
	settings := commoncfg.TLSRoundTripperSettings{CA: ca, Cert: cert, Key: key}
	return commoncfg.NewTLSRoundTripperWithContext(ctx, tlsConfig, settings, newRT)
}

// withAuthentication wraps rt in the layers that add credentials and
// headers, in prometheus/common's order.
func withAuthentication(cfg config.HTTPClientConfig, rt http.RoundTripper) (http.RoundTripper, error) {
	if a := cfg.Authorization; a != nil {
		credentials, err := secretOf(a.Credentials, a.CredentialsFile, a.CredentialsRef)
		if err != nil {
			return nil, err
		}
		rt = commoncfg.NewAuthorizationCredentialsRoundTripper(a.Type, credentials, rt)
	}
	if cfg.BearerToken != "" || cfg.BearerTokenFile != "" {
		// Validate turns these into Authorization; this is for configs
		// that were never validated, as prometheus/common does.
		token, err := secretOf(cfg.BearerToken, cfg.BearerTokenFile, "")
		if err != nil {
			return nil, err
		}
		rt = commoncfg.NewAuthorizationCredentialsRoundTripper("Bearer", token, rt)
	}
	if b := cfg.BasicAuth; b != nil {
		username, err := secretOf(commoncfg.Secret(b.Username), b.UsernameFile, b.UsernameRef)
		if err != nil {
			return nil, err
		}
		password, err := secretOf(b.Password, b.PasswordFile, b.PasswordRef)
		if err != nil {
			return nil, err
		}
		rt = commoncfg.NewBasicAuthRoundTripper(username, password, rt)
	}
	if o := cfg.OAuth2; o != nil {
		credential, err := secretOf(o.ClientSecret, o.ClientSecretFile, o.ClientSecretRef)
		if o.GrantType == grantTypeJWTBearer {
			credential, err = secretOf(o.ClientCertificateKey, o.ClientCertificateKeyFile, o.ClientCertificateKeyRef)
		}
		if err != nil {
			return nil, err
		}
		rt = commoncfg.NewOAuth2RoundTripper(credential, o, rt)
	}
	if cfg.HTTPHeaders != nil {
		rt = commoncfg.NewHeadersRoundTripper(cfg.HTTPHeaders, rt)
	}
	return rt, nil
}

// secretOf is a secret given inline or as a file; nil when neither is set.
// probegate has no secret manager, so a secret reference is an error.
func secretOf(inline commoncfg.Secret, file, ref string) (commoncfg.SecretReader, error) {
	switch {
	case inline != "":
		return commoncfg.NewInlineSecret(string(inline)), nil
	case file != "":
		return commoncfg.NewFileSecret(file), nil
	case ref != "":
		return nil, fmt.Errorf("secret reference %q: probegate has no secret manager; give the secret inline or as a file", ref)
	}
	return nil, nil
}

func immutable(s commoncfg.SecretReader) bool { return s == nil || s.Immutable() }

// probeContextKey marks the context of a probe request, which is how the
// split transport tells probes from fan-out requests.
type probeContextKey struct{}

// withProbeMark marks ctx as a probe's.
func withProbeMark(ctx context.Context) context.Context {
	return context.WithValue(ctx, probeContextKey{}, true)
}

// splitTransport sends probes through httpprobe and everything else
// through net/http. net/http's Transport is built on first use, so a
// backend that only ever gets probed never pays for it.
type splitTransport struct {
	probe *httpprobe.Transport
	// proxy is the configured proxy function; a probe to be proxied goes
	// through net/http, which speaks to proxies.
	proxy   func(*http.Request) (*url.URL, error)
	newFull func() *http.Transport

	mu   sync.Mutex
	full *http.Transport
}

func newSplitTransport(cfg config.HTTPClientConfig, tlsConfig *tls.Config, proxy func(*http.Request) (*url.URL, error)) *splitTransport {
	dialer := &net.Dialer{}
	return &splitTransport{
		probe: &httpprobe.Transport{DialContext: dialer.DialContext, TLSClientConfig: tlsConfig},
		proxy: proxy,
		newFull: func() *http.Transport {
			// The settings prometheus/common gives its transport.
			t := &http.Transport{
				Proxy:                 proxy,
				ProxyConnectHeader:    cfg.GetProxyConnectHeader(),
				MaxIdleConns:          20000,
				MaxIdleConnsPerHost:   1000,
				TLSClientConfig:       tlsConfig,
				DisableCompression:    true,
				IdleConnTimeout:       5 * time.Minute,
				TLSHandshakeTimeout:   10 * time.Second,
				ExpectContinueTimeout: time.Second,
				DialContext:           dialer.DialContext,
			}
			if cfg.EnableHTTP2 {
				t.Protocols = &http.Protocols{}
				t.Protocols.SetHTTP1(true)
				t.Protocols.SetHTTP2(true)
				t.HTTP2 = &http.HTTP2Config{SendPingTimeout: time.Minute}
			}
			return t
		},
	}
}

// RoundTrip implements http.RoundTripper.
func (s *splitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Context().Value(probeContextKey{}) != nil && !s.proxied(req) {
		return s.probe.RoundTrip(req)
	}
	return s.fullTransport().RoundTrip(req)
}

func (s *splitTransport) proxied(req *http.Request) bool {
	if s.proxy == nil {
		return false
	}
	u, err := s.proxy(req)
	// An error is net/http's to report.
	return err != nil || u != nil
}

func (s *splitTransport) fullTransport() *http.Transport {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.full == nil {
		s.full = s.newFull()
	}
	return s.full
}

// CloseIdleConnections closes the idle connections of both transports.
func (s *splitTransport) CloseIdleConnections() {
	s.probe.CloseIdleConnections()
	s.mu.Lock()
	full := s.full
	s.mu.Unlock()
	if full != nil {
		full.CloseIdleConnections()
	}
}
