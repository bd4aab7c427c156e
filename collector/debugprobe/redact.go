package debugprobe

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
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
// http_client_config, inline or read from their files, its basic auth
// pair as the header carries it, the values of its sensitive probe
// headers, and the credentials of sent, the sensitive header values the
// client wrote on the wire (a bearer or OAuth2 token no configuration
// holds). Each is hidden in every form an answer may echo it in.
func newRedactor(b *pool.Backend, sent []string) redactor {
	var secrets []string
	cc := b.ClientConfig()
	collectSecrets(reflect.ValueOf(&cc).Elem(), &secrets)
	if pair, ok := basicAuthPair(cc.BasicAuth); ok {
		secrets = append(secrets, pair)
	}
	for name, value := range b.Probe.Headers {
		if sensitiveHeader(name) {
			secrets = append(secrets, credentialsOf(value)...)
		}
	}
	for _, value := range sent {
		secrets = append(secrets, credentialsOf(value)...)
	}
	var forms []string
	for _, secret := range secrets {
		if secret != "" {
			forms = append(forms, encodings(secret)...)
		}
	}
	// The longest first, so that a secret containing another is hidden whole.
	sort.Slice(forms, func(i, j int) bool {
		return len(forms[i]) > len(forms[j]) || len(forms[i]) == len(forms[j]) && forms[i] < forms[j]
	})
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, form := range forms {
		pairs = append(pairs, form, redactedValue)
	}
	return redactor{secrets: strings.NewReplacer(pairs...)}
}

// basicAuthPair is "user:password" as the Authorization header carries
// it (base64-encoded), from the configuration or its files.
func basicAuthPair(ba *commoncfg.BasicAuth) (string, bool) {
	if ba == nil {
		return "", false
	}
	user, password := ba.Username, string(ba.Password)
	if ba.UsernameFile != "" {
		user = readSecretFile(ba.UsernameFile)
	}
	if ba.PasswordFile != "" {
		password = readSecretFile(ba.PasswordFile)
	}
	if password == "" {
		return "", false
	}
	return user + ":" + password, true
}

// credentialsOf are the secrets of one credential header value: the value
// itself and, after an authentication scheme ("Bearer abc", "Basic
// dXNlcjpwYXNz"), the credentials alone; for basic auth also the decoded
// "user:password" and the password.
func credentialsOf(value string) []string {
	out := []string{value}
	scheme, credentials, ok := strings.Cut(strings.TrimSpace(value), " ")
	if !ok {
		return out
	}
	credentials = strings.TrimSpace(credentials)
	out = append(out, credentials)
	if strings.EqualFold(scheme, "Basic") {
		if decoded, err := base64.StdEncoding.DecodeString(credentials); err == nil {
			out = append(out, string(decoded))
			if _, password, ok := strings.Cut(string(decoded), ":"); ok {
				out = append(out, password)
			}
		}
	}
	return out
}

// encodings are the forms in which a backend may echo secret: as it is,
// base64 (standard and URL alphabets, padded or not: an Authorization
// header, a JWT), URL-encoded (in a query or a path) and JSON-escaped
// (with and without HTML escaping).
func encodings(secret string) []string {
	raw := []byte(secret)
	forms := []string{
		secret,
		base64.StdEncoding.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw),
		base64.URLEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw),
		url.QueryEscape(secret), url.PathEscape(secret),
	}
	for _, escapeHTML := range []bool{true, false} {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		if enc.Encode(secret) == nil {
			quoted := strings.TrimSpace(b.String())
			forms = append(forms, quoted[1:len(quoted)-1])
		}
	}
	return forms
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
