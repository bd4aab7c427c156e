package debugprobe

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testclock"
	"github.com/probegate/probegate/internal/testconfig"
)

// hostileSecret changes under every encoding an answer may use.
const hostileSecret = `p@ss/w"rd&<x>+1 ü`

// encodedForms are the forms in which a backend may echo secret, named,
// written out here rather than taken from the redactor.
func encodedForms(secret string) map[string]string {
	jsonEscaped, _ := json.Marshal(secret)
	var plain strings.Builder
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	enc.Encode(secret)
	return map[string]string{
		"as is":                      secret,
		"base64":                     base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64 unpadded":            base64.RawStdEncoding.EncodeToString([]byte(secret)),
		"base64url":                  base64.URLEncoding.EncodeToString([]byte(secret)),
		"url query":                  url.QueryEscape(secret),
		"url path":                   url.PathEscape(secret),
		"json":                       strings.Trim(string(jsonEscaped), `"`),
		"json without html escaping": strings.Trim(strings.TrimSpace(plain.String()), `"`),
	}
}

// echoingBackend answers its probe with every encoded form of each of
// secrets in a header and in the body, and with the Authorization header
// it received, as a backend that reflects its request does.
func echoingBackend(t *testing.T, secrets ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body strings.Builder
		i := 0
		for _, secret := range secrets {
			for name, form := range encodedForms(secret) {
				w.Header().Add(fmt.Sprintf("X-Echo-%d", i), form)
				fmt.Fprintf(&body, "%s: %s\n", name, form)
				i++
			}
		}
		fmt.Fprintf(&body, "you sent: %s\n", r.Header.Get("Authorization"))
		w.Header().Set("X-Seen-Authorization", r.Header.Get("Authorization"))
		fmt.Fprint(w, body.String())
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// checkNoForm fails when a report, in either format, shows any encoded
// form of any of secrets. The JSON report is decoded first, so that a
// secret JSON-escaped by the report itself is caught too.
func checkNoForm(t *testing.T, cc config.HTTPClientConfig, target string, secrets ...string) {
	t.Helper()
	cfg := testconfig.New(config.Backend{Name: "a", URL: target, HTTPClientConfig: &cc})
	clock := testclock.New(time.Unix(1700000000, 0))
	h := Handler(Options{Pool: newPool(t, cfg), Now: clock.Now})
	code, _, body := get(t, h, "/api/v1/backends/a/probe")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	rep := decode(t, body)
	if rep.Response == nil || !strings.Contains(rep.Response.Body, "you sent: ") {
		t.Fatalf("the report has no echoed answer: %s", body)
	}
	shown := []string{rep.Response.Body}
	for _, values := range rep.Response.Header {
		shown = append(shown, values...)
	}
	clock.Advance(time.Second)
	code, _, text := get(t, h, "/api/v1/backends/a/probe?format=text")
	if code != http.StatusOK {
		t.Fatalf("text: status %d: %s", code, text)
	}
	shown = append(shown, text)
	for _, secret := range secrets {
		for name, form := range encodedForms(secret) {
			for _, s := range shown {
				if strings.Contains(s, form) {
					t.Errorf("the report shows %q %s: %q", secret, name, form)
				}
			}
		}
	}
}

// TestDebugProbeRedactsBasicAuthInEveryEncoding reproduces the audit's
// finding: the debug probe showed a base64 Authorization header that
// decodes to the backend's password. The password and the user:password
// pair are hidden as they are, base64-, URL- and JSON-encoded.
func TestDebugProbeRedactsBasicAuthInEveryEncoding(t *testing.T) {
	target := echoingBackend(t, hostileSecret, "probegate:"+hostileSecret)
	cc := config.HTTPClientConfig{BasicAuth: &commoncfg.BasicAuth{Username: "probegate", Password: hostileSecret}}
	checkNoForm(t, cc, target, hostileSecret, "probegate:"+hostileSecret)
}

// TestDebugProbeRedactsBearerTokensInEveryEncoding: a bearer token of the
// configuration, in every form.
func TestDebugProbeRedactsBearerTokensInEveryEncoding(t *testing.T) {
	token := "bearer/" + hostileSecret
	target := echoingBackend(t, token, "Bearer "+token)
	cc := config.HTTPClientConfig{Authorization: &commoncfg.Authorization{Type: "Bearer", Credentials: commoncfg.Secret(token)}}
	checkNoForm(t, cc, target, token, "Bearer "+token)
}

// TestDebugProbeRedactsOAuth2TokensInEveryEncoding: an OAuth2 access
// token is in no configuration; the client fetched it from the token
// endpoint and sent it, and it is hidden in every form too.
func TestDebugProbeRedactsOAuth2TokensInEveryEncoding(t *testing.T) {
	accessToken := "oauth2/" + hostileSecret
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": accessToken, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(tokens.Close)
	target := echoingBackend(t, accessToken, "Bearer "+accessToken)
	cc := config.HTTPClientConfig{OAuth2: &commoncfg.OAuth2{ClientID: "probegate", ClientSecret: "client-secret-31", TokenURL: tokens.URL}}
	checkNoForm(t, cc, target, accessToken, "Bearer "+accessToken, "client-secret-31")
}
