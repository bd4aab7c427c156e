package httpclient

import (
	"crypto/tls"
	"net/url"
	"reflect"
	"slices"
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
		{"bearer_token_file", with(func(c *config.HTTPClientConfig) { c.BearerTokenFile = "token" }), "http", "bearer_token_file"},
		{"a secret by reference", with(func(c *config.HTTPClientConfig) { c.TLSConfig.KeyRef = "key" }), "http", "tls_config.key_ref"},
		{"no_proxy alone", with(func(c *config.HTTPClientConfig) { c.NoProxy = "example.com" }), "http", ""},
		{"client certificate files and TLS versions", with(func(c *config.HTTPClientConfig) {
			c.TLSConfig.CertFile, c.TLSConfig.KeyFile, c.TLSConfig.ServerName = "cert.pem", "key.pem", "backend"
			c.TLSConfig.MinVersion, c.TLSConfig.InsecureSkipVerify = commoncfg.TLSVersion(tls.VersionTLS12), true
		}), "http", ""},
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

// TestEveryClientFieldIsClassified: every field of http_client_config,
// those of tls_config and of the inlined proxy block each on its own, is
// classified in the table TransportOnly decides by, and the table names
// no field that is not there. A field a newer prometheus/common adds
// fails this test until someone decides which path honours it.
func TestEveryClientFieldIsClassified(t *testing.T) {
	var keys []string
	walkClientFields(reflect.ValueOf(config.HTTPClientConfig{}), "", func(key string, _ reflect.Value) bool {
		keys = append(keys, key)
		if _, ok := clientFields[key]; !ok {
			t.Errorf("http_client_config field %q is not classified: decide whether the owned connection honours it, and add it to clientFields", key)
		}
		return true
	})
	for key := range clientFields {
		if !slices.Contains(keys, key) {
			t.Errorf("clientFields classifies %q, which http_client_config has no field for", key)
		}
	}
	// The walk reached into the nested blocks.
	for _, key := range []string{"tls_config.ca_file", "tls_config.max_version", "proxy_url", "proxy_connect_header"} {
		if !slices.Contains(keys, key) {
			t.Errorf("the walk did not reach %q; it visited %q", key, keys)
		}
	}
}

// laterClientConfig stands for an http_client_config that a later
// prometheus/common extends with fields this probegate does not know: a
// plain one and one in a nested block.
type laterClientConfig struct {
	config.HTTPClientConfig `yaml:",inline"`
	Compression             string `yaml:"compression,omitempty"`
	Retry                   struct {
		Attempts int `yaml:"attempts"`
	} `yaml:"retry"`
}

// TestTransportOnlyKeepsUnknownFieldsOnTheTransport: a field the table
// does not classify keeps the probe on the Transport whenever it is set,
// and is named; unset, it changes nothing.
func TestTransportOnlyKeepsUnknownFieldsOnTheTransport(t *testing.T) {
	u := &url.URL{Scheme: "http", Host: "backend:8080"}
	var cfg laterClientConfig
	if got := transportOnly(reflect.ValueOf(cfg), u); got != "" {
		t.Errorf("unset unknown fields: TransportOnly = %q, want \"\"", got)
	}
	cfg.Compression = "zstd"
	if got := transportOnly(reflect.ValueOf(cfg), u); got != "compression" {
		t.Errorf("an unknown field set: TransportOnly = %q, want %q", got, "compression")
	}
	cfg.Compression, cfg.Retry.Attempts = "", 3
	if got := transportOnly(reflect.ValueOf(cfg), u); got != "retry.attempts" {
		t.Errorf("an unknown nested field set: TransportOnly = %q, want %q", got, "retry.attempts")
	}
}
