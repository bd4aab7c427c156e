package debugprobe

import (
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/collector/pool"
)

// redactedValue replaces a secret, as Prometheus writes one.
const redactedValue = "<secret>"

// sensitiveHeaderWords mark a header whose value is a credential or a
// session, whatever the exact name: Authorization, Proxy-Authorization,
// Cookie, X-Auth-Token, X-Api-Key, X-Amz-Security-Token, ...
var sensitiveHeaderWords = []string{"auth", "cookie", "token", "secret", "password", "passwd", "api-key", "apikey", "session", "credential", "signature"}

// sensitiveHeader reports whether a header's value must not be shown.
func sensitiveHeader(name string) bool {
	lower := strings.ToLower(name)
	for _, w := range sensitiveHeaderWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// redactor hides what a debug probe must not show: the values of
// sensitive headers, and every secret of the backend's configuration
// wherever it appears (a backend that echoes the request's credentials in
// a header or its body).
type redactor struct {
	secrets *strings.Replacer
}

// newRedactor collects the secrets of a backend: those of its
// http_client_config, inline or read from their files, and the values of
// its sensitive probe headers.
func newRedactor(b *pool.Backend) redactor {
	var secrets []string
	cc := b.ClientConfig()
	collectSecrets(reflect.ValueOf(&cc).Elem(), &secrets)
	for name, value := range b.Probe.Headers {
		if sensitiveHeader(name) {
			secrets = append(secrets, value)
		}
	}
	// The longest first, so that a secret containing another is hidden whole.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	secrets = slices.Compact(secrets)
	var pairs []string
	for _, s := range secrets {
		if s != "" {
			pairs = append(pairs, s, redactedValue)
		}
	}
	return redactor{secrets: strings.NewReplacer(pairs...)}
}

var secretType = reflect.TypeFor[commoncfg.Secret]()

// maxSecretFileBytes bounds what is read of a credentials file.
const maxSecretFileBytes = 64 << 10

// collectSecrets appends every commoncfg.Secret under v, and the content
// of every file of credentials (the *_file keys, and the files of
// http_headers) outside tls_config, whose files are certificates and keys
// no answer contains.
func collectSecrets(v reflect.Value, out *[]string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			collectSecrets(v.Elem(), out)
		}
	case reflect.Map:
		for _, key := range v.MapKeys() {
			collectSecrets(v.MapIndex(key), out)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			collectSecrets(v.Index(i), out)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[commoncfg.TLSConfig]() {
			return
		}
		for i := range v.NumField() {
			field, value := v.Type().Field(i), v.Field(i)
			if !field.IsExported() {
				continue
			}
			switch {
			case value.Kind() == reflect.String && strings.HasSuffix(field.Name, "File"):
				*out = append(*out, readSecretFile(value.String()))
			case field.Name == "Files" && value.Type() == reflect.TypeFor[[]string]():
				for _, path := range value.Interface().([]string) {
					*out = append(*out, readSecretFile(path))
				}
			default:
				collectSecrets(value, out)
			}
		}
	case reflect.String:
		if v.Type() == secretType {
			*out = append(*out, v.String())
		}
	}
}

// readSecretFile is a credentials file's content as prometheus/common
// sends it (surrounding white space trimmed), "" when there is none.
func readSecretFile(path string) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, maxSecretFileBytes))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(content))
}

// text hides every secret in s.
func (r redactor) text(s string) string {
	return r.secrets.Replace(s)
}

// header is a copy of h with sensitive values hidden: Set-Cookie keeps
// each cookie's name and attributes, other sensitive headers keep nothing,
// and known secrets are hidden anywhere.
func (r redactor) header(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for name, values := range h {
		shown := make([]string, len(values))
		for i, v := range values {
			switch {
			case http.CanonicalHeaderKey(name) == "Set-Cookie":
				shown[i] = r.text(redactCookie(v))
			case sensitiveHeader(name):
				shown[i] = redactedValue
			default:
				shown[i] = r.text(v)
			}
		}
		out[name] = shown
	}
	return out
}

// redactCookie hides the value of a Set-Cookie header's cookie and keeps
// its name and attributes (Path, Expires, HttpOnly, ...), which say what
// the backend does without handing over the session.
func redactCookie(v string) string {
	pair, attributes, _ := strings.Cut(v, ";")
	name, _, _ := strings.Cut(pair, "=")
	out := strings.TrimSpace(name) + "=" + redactedValue
	if attributes != "" {
		out += ";" + attributes
	}
	return out
}
