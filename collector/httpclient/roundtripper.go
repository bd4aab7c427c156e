package httpclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/config"
)

// idleConnTimeout is how long a backend's most recently used idle
// connection is kept: above the usual probe intervals, so that a backend
// keeps its probe connection between probes. Its other idle connections
// close sooner, after surplusIdleTimeout.
const idleConnTimeout = 90 * time.Second

// maxIdleConnsPerHost is how many idle connections a transport keeps to one
// backend. Probes never overlap on a backend and need one; concurrent
// fan-out rounds need one each. With a bound of one (tried, to keep a
// backend at one connection between bursts), every round beyond the first
// in flight dialed a connection and closed it after its answer: the
// fan-out served 0.43 of a minimal net/http fan-out's requests per second
// under 16 concurrent clients, and each round left TIME_WAIT sockets
// behind, which at a few thousand rounds a second exhausts the ephemeral
// ports. A backend's most recently used idle connection stays for
// idleConnTimeout; the surplus a burst leaves closes sooner (surplus.go).
const maxIdleConnsPerHost = 32

// The buffers of a connection. net/http's default, 4 KiB each way, was
// more than half of the live heap at 5,000 backends, each keeping its
// connection: a probe writes a request of a few hundred bytes and reads an
// answer whose head is about as long. A head longer than the read buffer
// is still read whole (net/textproto reads a line across refills), and a
// body or request body larger than a buffer bypasses it, so smaller
// buffers cost a larger exchange a few more reads, not correctness.
const (
	readBufferSize  = 2 << 10
	writeBufferSize = 1 << 10
)

// newRoundTripper builds the round tripper of cfg the way prometheus/common's
// NewRoundTripperFromConfig does, from common's own building blocks (the
// TLS configuration and its file reloading, authorization, basic auth,
// OAuth2, headers, proxies), so that every http_client_config field means
// what it means in a Prometheus scrape. It differs in the transport only:
//
//   - no go-conntrack dialer. common wraps every dial in one with an
//     x/net/trace event log per connection, which nothing here can read
//     (no /debug/events is served) and which was close to a third of the
//     live heap at 5,000 backends; conns dials instead, and the pooled
//     transport reports which connections are idle to it, so that a
//     backend's surplus idle connections close soon (surplus.go).
//   - at most maxIdleConnsPerHost idle connections per backend, and no
//     pool-wide bound, which at 20,000 (common's) would make a larger pool
//     close and redial connections at random.
//
// keepAlive false makes a transport that opens a new connection for every
// request and closes it after the answer.
func newRoundTripper(cfg config.HTTPClientConfig, conns *connTracker, keepAlive bool) (http.RoundTripper, error) {
	newRT := func(tlsConfig *tls.Config) (http.RoundTripper, error) {
		// A pool per transport: a TLS reload builds a new one.
		pool := conns.newPool()
		dial := pool.DialContext
		proxy := cfg.Proxy()
		transport := &http.Transport{
			Proxy:                  proxy,
			ProxyConnectHeader:     cfg.GetProxyConnectHeader(),
			MaxIdleConnsPerHost:    maxIdleConnsPerHost,
			DisableKeepAlives:      !keepAlive,
			TLSClientConfig:        tlsConfig,
			DisableCompression:     true,
			IdleConnTimeout:        idleConnTimeout,
			TLSHandshakeTimeout:    10 * time.Second,
			ExpectContinueTimeout:  time.Second,
			DialContext:            dial,
			ReadBufferSize:         readBufferSize,
			WriteBufferSize:        writeBufferSize,
			MaxResponseHeaderBytes: MaxResponseHeaderBytes,
		}
		if cfg.EnableHTTP2 {
			// As common: HTTP/2 is offered (over TLS, by ALPN) only when
			// enable_http2 says so; a customised Transport speaks only
			// HTTP/1.1 otherwise.
			transport.Protocols = &http.Protocols{}
			transport.Protocols.SetHTTP1(true)
			transport.Protocols.SetHTTP2(true)
			transport.HTTP2 = &http.HTTP2Config{SendPingTimeout: time.Minute}
		}
		var rt http.RoundTripper = transport
		// Through a proxy every backend's connection is dialled to the
		// proxy's address, so the tracker could not tell one backend's
		// surplus from another backend's only connection: such a
		// transport keeps its idle connections for idleConnTimeout.
		if keepAlive && proxy == nil {
			rt = &tracedTransport{Transport: transport, pool: pool}
		}

		if a := cfg.Authorization; a != nil {
			credentials, err := secret(a.Credentials, a.CredentialsFile, a.CredentialsRef)
			if err != nil {
				return nil, fmt.Errorf("unable to use credentials: %w", err)
			}
			rt = commoncfg.NewAuthorizationCredentialsRoundTripper(a.Type, credentials, rt)
		}
		// Kept for configurations that were not validated, as common does:
		// validation turns bearer_token into authorization.
		if cfg.BearerToken != "" || cfg.BearerTokenFile != "" {
			token, err := secret(cfg.BearerToken, cfg.BearerTokenFile, "")
			if err != nil {
				return nil, fmt.Errorf("unable to use bearer token: %w", err)
			}
			rt = commoncfg.NewAuthorizationCredentialsRoundTripper("Bearer", token, rt)
		}
		if a := cfg.BasicAuth; a != nil {
			username, err := secret(commoncfg.Secret(a.Username), a.UsernameFile, a.UsernameRef)
			if err != nil {
				return nil, fmt.Errorf("unable to use username: %w", err)
			}
			password, err := secret(a.Password, a.PasswordFile, a.PasswordRef)
			if err != nil {
				return nil, fmt.Errorf("unable to use password: %w", err)
			}
			rt = commoncfg.NewBasicAuthRoundTripper(username, password, rt)
		}
		if o := cfg.OAuth2; o != nil {
			var credential commoncfg.SecretReader
			var err error
			if o.GrantType == "urn:ietf:params:oauth:grant-type:jwt-bearer" {
				credential, err = secret(o.ClientCertificateKey, o.ClientCertificateKeyFile, o.ClientCertificateKeyRef)
				if err != nil {
					return nil, fmt.Errorf("unable to use client certificate: %w", err)
				}
			} else {
				credential, err = secret(o.ClientSecret, o.ClientSecretFile, o.ClientSecretRef)
				if err != nil {
					return nil, fmt.Errorf("unable to use client secret: %w", err)
				}
			}
			// The token requests dial through the same tracker, without
			// conntrack either.
			rt = commoncfg.NewOAuth2RoundTripper(credential, o, rt, commoncfg.WithDialContextFunc(dial))
		}
		if cfg.HTTPHeaders != nil {
			// common also strips these headers on a redirect to another
			// host; probegate's requests never follow a redirect, so there
			// is none to strip them from.
			rt = commoncfg.NewHeadersRoundTripper(cfg.HTTPHeaders, rt)
		}
		return rt, nil
	}

	tlsConfig, err := commoncfg.NewTLSConfig(&cfg.TLSConfig)
	if err != nil {
		return nil, err
	}
	tc := cfg.TLSConfig
	var settings commoncfg.TLSRoundTripperSettings
	if settings.CA, err = secret(commoncfg.Secret(tc.CA), tc.CAFile, tc.CARef); err != nil {
		return nil, err
	}
	if settings.Cert, err = secret(commoncfg.Secret(tc.Cert), tc.CertFile, tc.CertRef); err != nil {
		return nil, err
	}
	if settings.Key, err = secret(tc.Key, tc.KeyFile, tc.KeyRef); err != nil {
		return nil, err
	}
	if immutable(settings.CA) && immutable(settings.Cert) && immutable(settings.Key) {
		// Nothing to reload: no files.
		return newRT(tlsConfig)
	}
	// Files are read again as they change (a renewed certificate, a
	// rotated CA), and the transport rebuilt, as in Prometheus.
	return commoncfg.NewTLSRoundTripperWithContext(context.Background(), tlsConfig, settings, newRT)
}

// errSecretRef is the error for a secret given by reference: references
// need a secret manager, and probegate has none.
var errSecretRef = errors.New("cannot use secret ref without manager")

// secret is the reader of a secret given inline, as a file or by reference
// (at most one of them, which validation ensures), nil when none is given.
func secret(text commoncfg.Secret, file, ref string) (commoncfg.SecretReader, error) {
	switch {
	case text != "":
		return commoncfg.NewInlineSecret(string(text)), nil
	case file != "":
		return commoncfg.NewFileSecret(file), nil
	case ref != "":
		return nil, errSecretRef
	}
	return nil, nil
}

func immutable(s commoncfg.SecretReader) bool { return s == nil || s.Immutable() }
