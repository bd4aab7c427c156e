package httpclient

import (
	"net/url"
	"testing"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/config"
)

// TestTransportOnly: each http_client_config setting that only net/http's
// Transport gives keeps a probe on it, and is named; the defaults over
// plain HTTP, and over https without HTTP/2, do not.
func TestTransportOnly(t *testing.T) {
	proxy, _ := url.Parse("http://proxy.example:3128")
	with := func(change func(*config.HTTPClientConfig)) config.HTTPClientConfig {
		cfg := commoncfg.DefaultHTTPClientConfig
		change(&cfg)
		return cfg
	}
	noHTTP2 := func(c *config.HTTPClientConfig) { c.EnableHTTP2 = false }
	cases := []struct {
		name   string
		cfg    config.HTTPClientConfig
		scheme string
		want   string
	}{
		{"defaults over http", commoncfg.DefaultHTTPClientConfig, "http", ""},
		{"defaults over https", commoncfg.DefaultHTTPClientConfig, "https", "enable_http2"},
		{"https without HTTP/2", with(noHTTP2), "https", ""},
		{"inline CA and client certificate", with(func(c *config.HTTPClientConfig) {
			noHTTP2(c)
			c.TLSConfig.CA, c.TLSConfig.CertFile, c.TLSConfig.KeyFile = "pem", "cert.pem", "key.pem"
		}), "https", ""},
		{"proxy_url", with(func(c *config.HTTPClientConfig) { c.ProxyURL = commoncfg.URL{URL: proxy} }), "http", "proxy_url"},
		{"proxy_from_environment", with(func(c *config.HTTPClientConfig) { c.ProxyFromEnvironment = true }), "http", "proxy_from_environment"},
		{"oauth2", with(func(c *config.HTTPClientConfig) { c.OAuth2 = &commoncfg.OAuth2{ClientID: "id"} }), "http", "oauth2"},
		{"ca_file", with(func(c *config.HTTPClientConfig) { c.TLSConfig.CAFile = "ca.pem" }), "http", "tls_config.ca_file"},
		{"basic_auth", with(func(c *config.HTTPClientConfig) { c.BasicAuth = &commoncfg.BasicAuth{Username: "u"} }), "http", "basic_auth"},
		{"authorization", with(func(c *config.HTTPClientConfig) { c.Authorization = &commoncfg.Authorization{Type: "Bearer"} }), "http", "authorization"},
		{"bearer_token_file", with(func(c *config.HTTPClientConfig) { c.BearerTokenFile = "token" }), "http", "authorization"},
		{"http_headers", with(func(c *config.HTTPClientConfig) {
			c.HTTPHeaders = &commoncfg.Headers{Headers: map[string]commoncfg.Header{"X-A": {Values: []string{"b"}}}}
		}), "http", "http_headers"},
		{"empty http_headers", with(func(c *config.HTTPClientConfig) { c.HTTPHeaders = &commoncfg.Headers{} }), "http", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := &url.URL{Scheme: tc.scheme, Host: "backend:8080"}
			if got := TransportOnly(tc.cfg, u); got != tc.want {
				t.Errorf("TransportOnly = %q, want %q", got, tc.want)
			}
		})
	}
}
