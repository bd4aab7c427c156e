package httpclient

import (
	"net/url"
	"reflect"
	"strings"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/config"
)

// TransportOnly names the first http_client_config setting of cfg that
// only net/http's Transport gives a request to u, and is "" when there is
// none: then a probe may write and read its own HTTP/1.1 connection (as
// the HTTP probe does) and still send exactly what the Transport would.
//
// It decides by clientFields, which classifies every field of the
// configuration, and it is an allow-list: a field clientFields does not
// name (one a newer prometheus/common added) keeps the probe on the
// Transport whenever it is set, since prometheus/common's round trippers
// are what implements it. A test fails until such a field is classified.
func TransportOnly(cfg config.HTTPClientConfig, u *url.URL) string {
	return transportOnly(reflect.ValueOf(cfg), u)
}

// transportOnly is TransportOnly for the struct v, an http_client_config
// or, in the tests, a struct that stands for a later one.
func transportOnly(v reflect.Value, u *url.URL) string {
	var reason string
	walkClientFields(v, "", func(key string, v reflect.Value) bool {
		field, known := clientFields[key]
		switch {
		case !known:
			if !v.IsZero() {
				reason = key
			}
		case field.needsTransport != nil:
			if field.needsTransport(v, u) {
				reason = key
			}
		}
		return reason == ""
	})
	return reason
}

// clientField is how a probe honours one field of http_client_config.
type clientField struct {
	// needsTransport reports whether the field's value v needs net/http's
	// Transport for a request to u; nil when the owned connection honours
	// every value of the field.
	needsTransport func(v reflect.Value, u *url.URL) bool
}

// ownedPath is a field the owned connection honours whatever its value;
// transportWhenSet one it cannot honour, so that any value but the zero
// one keeps the probe on the Transport.
var (
	ownedPath        = clientField{}
	transportWhenSet = clientField{needsTransport: func(v reflect.Value, _ *url.URL) bool { return !v.IsZero() }}
)

// clientFields classifies every field of http_client_config, by its YAML
// key (a nested field's keys joined by dots, an inlined block's without
// its own), as one the owned connection honours or one that needs
// net/http's Transport. The Transport is needed for what it implements
// beyond one connection and one request: a proxy (its CONNECT and its own
// connection), OAuth2 (a token fetched over a connection of its own),
// HTTP/2 over TLS (which the Transport negotiates whenever the backend
// offers it), a CA file (which the Transport's TLS layer reloads as it
// changes), the credentials and headers the round trippers add (whose
// files are read again for every request), and secrets given by reference
// (which the Transport's builder refuses with its own error). The owned
// connection builds its TLS configuration with prometheus/common's
// NewTLSConfig, which honours the other TLS fields (client certificate
// files are read at each handshake); it never follows a redirect, nor
// does the Transport path; and no_proxy and proxy_connect_header mean
// something only beside a proxy.
var clientFields = map[string]clientField{
	"basic_auth":        transportWhenSet,
	"authorization":     transportWhenSet,
	"oauth2":            transportWhenSet,
	"bearer_token":      transportWhenSet,
	"bearer_token_file": transportWhenSet,

	"tls_config.ca":                   ownedPath,
	"tls_config.cert":                 ownedPath,
	"tls_config.key":                  ownedPath,
	"tls_config.ca_file":              transportWhenSet,
	"tls_config.cert_file":            ownedPath,
	"tls_config.key_file":             ownedPath,
	"tls_config.ca_ref":               transportWhenSet,
	"tls_config.cert_ref":             transportWhenSet,
	"tls_config.key_ref":              transportWhenSet,
	"tls_config.server_name":          ownedPath,
	"tls_config.insecure_skip_verify": ownedPath,
	"tls_config.min_version":          ownedPath,
	"tls_config.max_version":          ownedPath,

	"follow_redirects": ownedPath,
	"enable_http2": {needsTransport: func(v reflect.Value, u *url.URL) bool {
		// Over plain HTTP the Transport speaks HTTP/1.1 too.
		return v.Bool() && u.Scheme == "https"
	}},

	"proxy_url":              transportWhenSet,
	"no_proxy":               ownedPath,
	"proxy_from_environment": transportWhenSet,
	"proxy_connect_header":   ownedPath,

	"http_headers": {needsTransport: func(v reflect.Value, _ *url.URL) bool {
		// An empty block adds no header.
		headers, _ := v.Interface().(*commoncfg.Headers)
		return headers != nil && len(headers.Headers) > 0
	}},
}

// walkClientFields calls visit with the key and value of every field of
// the http_client_config v, in the order of the struct, until visit
// returns false. It descends into a struct-valued field that clientFields
// does not name (tls_config, an inlined block, a block a newer
// prometheus/common added), so that each of its fields is visited and
// classified on its own; every other field is visited whole. Unexported
// fields are not configuration and are skipped.
func walkClientFields(v reflect.Value, prefix string, visit func(key string, v reflect.Value) bool) bool {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		key := prefix + name
		if name == "" && !f.Anonymous {
			key = prefix + f.Name
		}
		_, known := clientFields[key]
		if f.Type.Kind() == reflect.Struct && !known {
			next := prefix
			if name != "" || !f.Anonymous {
				next = key + "."
			}
			if !walkClientFields(v.Field(i), next, visit) {
				return false
			}
			continue
		}
		if !visit(key, v.Field(i)) {
			return false
		}
	}
	return true
}
