package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCheckConfig parses args as main does and runs check-config.
func runCheckConfig(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = checkConfig(mustParseFlags(t, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCheckConfigValidFile(t *testing.T) {
	isolateEnv(t)
	file := "../../config/testdata/valid-full.yml"
	code, stdout, stderr := runCheckConfig(t, "--config.file="+file)
	want := file + ": ok, 3 backends, plus those of 1 file_sd_configs and 1 dns_sd_configs\n"
	if code != 0 || stdout != want || stderr != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, want)
	}
}

func TestCheckConfigInvalidFile(t *testing.T) {
	isolateEnv(t)
	file := "../../config/testdata/invalid-backend-probe-timeout-longer.yml"
	code, stdout, stderr := runCheckConfig(t, "--config.file="+file)
	want := file + ":10: backends[1].health_probe.timeout: 10s is longer than the interval 5s (health_probe.interval at line 2)\n"
	if code != 1 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", code, stdout, stderr, want)
	}
}

func TestCheckConfigWithoutAFile(t *testing.T) {
	isolateEnv(t)
	t.Chdir(t.TempDir())
	code, stdout, stderr := runCheckConfig(t, "--backend=a=http://127.0.0.1:1")
	if want := "defaults and flags (probegate.yml not found): ok, 1 backend\n"; code != 0 || stdout != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, want)
	}
}

func TestCheckConfigReadsTLSFiles(t *testing.T) {
	isolateEnv(t)
	file := filepath.Join(t.TempDir(), "probegate.yml")
	data := "http_client_config:\n  tls_config:\n    ca_file: missing-ca.pem\n"
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCheckConfig(t, "--config.file="+file)
	if code != 1 || !strings.HasPrefix(stderr, file+":1: http_client_config: ") || !strings.Contains(stderr, "missing-ca.pem") {
		t.Errorf("exit %d, stderr %q; want 1 naming the file, line 1, http_client_config and missing-ca.pem", code, stderr)
	}
}

func TestCheckConfigChecksTheWebConfigFile(t *testing.T) {
	isolateEnv(t)
	t.Chdir(t.TempDir())
	web := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(web, []byte("tls_server_config:\n  cert_file: missing.pem\n  key_file: missing-key.pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCheckConfig(t, "--web.config.file="+web)
	if code != 1 || !strings.HasPrefix(stderr, "--web.config.file "+web+": ") {
		t.Errorf("exit %d, stderr %q; want 1 naming --web.config.file", code, stderr)
	}
}
