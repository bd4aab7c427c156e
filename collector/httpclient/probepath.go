package httpclient

import (
	"net/url"

	"github.com/probegate/probegate/config"
)

// TransportOnly names the first http_client_config setting of cfg that
// only net/http's Transport gives a request to u, and is "" when there is
// none: then a probe may write and read its own HTTP/1.1 connection (as
// the HTTP probe does) and still send exactly what the Transport would.
//
// The settings are those the Transport implements beyond one connection
// and one request: a proxy (its CONNECT and its own connection), OAuth2
// (a token fetched over a connection of its own), HTTP/2 over TLS (which
// the Transport negotiates whenever the backend offers it), a CA file
// (which the Transport's TLS layer reloads as it changes), and the
// credentials and headers the round trippers add (whose files are read
// again for every request).
func TransportOnly(cfg config.HTTPClientConfig, u *url.URL) string {
	switch {
	case cfg.ProxyURL.URL != nil:
		return "proxy_url"
	case cfg.ProxyFromEnvironment:
		return "proxy_from_environment"
	case cfg.OAuth2 != nil:
		return "oauth2"
	case cfg.EnableHTTP2 && u.Scheme == "https":
		return "enable_http2"
	case cfg.TLSConfig.CAFile != "":
		return "tls_config.ca_file"
	case cfg.BasicAuth != nil:
		return "basic_auth"
	case cfg.Authorization != nil, cfg.BearerToken != "", cfg.BearerTokenFile != "":
		return "authorization"
	case cfg.HTTPHeaders != nil && len(cfg.HTTPHeaders.Headers) > 0:
		return "http_headers"
	}
	return ""
}
