package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestRedactedYAMLHidesEverySecret: inline passwords, bearer tokens, basic
// auth passwords, OAuth2 client secrets and URL passwords never appear;
// the rest of the configuration does, and the YAML decodes again.
func TestRedactedYAMLHidesEverySecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "probegate.yml")
	doc := `
readiness:
  max_unavailable: 30%
fanout:
  max_response_bytes: 8MiB
http_client_config:
  basic_auth: {username: probe, password: s3cret-basic}
backends:
  - name: a
    url: http://admin:s3cret-url@127.0.0.1:8081
    http_client_config:
      authorization: {type: Bearer, credentials: s3cret-bearer}
  - name: b
    url: http://127.0.0.1:8082
    http_client_config:
      oauth2: {client_id: id, client_secret: s3cret-oauth, token_url: http://127.0.0.1:9/token}
`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := DecodeFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cfg.RedactedYAML()
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	if strings.Contains(text, "s3cret") {
		t.Errorf("a secret is shown:\n%s", text)
	}
	for _, want := range []string{"password: <secret>", "credentials: <secret>", "client_secret: <secret>",
		"url: http://admin:xxxxx@127.0.0.1:8081", "max_unavailable: 30%", "max_response_bytes: 8MiB", "interval: 5s"} {
		if !strings.Contains(text, want) {
			t.Errorf("YAML lacks %q:\n%s", want, text)
		}
	}
	var back map[string]any
	if err := yaml.Unmarshal(out, &back); err != nil {
		t.Errorf("the YAML does not decode: %v", err)
	}
}
