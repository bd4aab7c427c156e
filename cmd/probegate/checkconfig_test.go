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
	code = checkConfig(parsed(t, args...), &out, &errOut)
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
	code, _, stderr := runCheckConfig(t, "--web.config.file="+web, "--backend=a=http://127.0.0.1:1")
	if code != 1 || !strings.HasPrefix(stderr, "--web.config.file "+web+": ") {
		t.Errorf("exit %d, stderr %q; want 1 naming --web.config.file", code, stderr)
	}
}

// TestCheckConfigRefusesABudgetTheBackendsCannotMeet: /ready would be 503
// for ever, so check-config says so, naming the line, unless service
// discovery may add the backends the budget asks for. The rule's own
// cases are budget's (TestCheckListed); these show check-config applies
// it to the file with its flags.
func TestCheckConfigRefusesABudgetTheBackendsCannotMeet(t *testing.T) {
	isolateEnv(t)
	two := "backends:\n  - {name: a, url: http://127.0.0.1:1}\n  - {name: b, url: http://127.0.0.1:2}\n"
	grouped := "backends:\n  - {name: a, url: http://127.0.0.1:1, group: s1}\n  - {name: b, url: http://127.0.0.1:2, group: s1}\n"
	for _, tc := range []struct {
		name, yaml string
		args       []string
		code       int
		stderr     string
	}{
		{"min_available 5 of 2", "readiness:\n  min_available: 5\n" + two, nil, 1,
			":2: readiness.min_available: min_available 5 needs 5 backends in service, but the list has only 2 backends and no service discovery adds more: /ready would answer 503 for ever\n"},
		{"no backend", "gate:\n  drain: 5s\n", nil, 1,
			": readiness.min_available: the default readiness.min_available 1 needs 1 backend in service, but the list has none and no service discovery adds more: /ready would answer 503 for ever\n"},
		{"--backend flags count", "readiness:\n  min_available: 3\n" + two, []string{"--backend=c=http://127.0.0.1:3"}, 0, ""},
		{"discovery may add them", "readiness:\n  min_available: 5\nfile_sd_configs:\n  - files: [more.yml]\n" + two, nil, 0, ""},
		{"per_group min_available 3 of a group of 2", "readiness:\n  per_group:\n    min_available: 3\n" + grouped, nil, 1,
			`:3: readiness.per_group.min_available: min_available 3 needs 3 backends in service in group "s1", but it has only 2 backends and no service discovery adds more: /ready would answer 503 for ever (check group_budget)` + "\n"},
		{"per_group min_available 2 of a group of 2", "readiness:\n  per_group: {min_available: 2}\n" + grouped, nil, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, tc.yaml)
			code, _, stderr := runCheckConfig(t, append([]string{"--config.file=" + file}, tc.args...)...)
			if code != tc.code || (tc.stderr == "" && stderr != "") || (tc.stderr != "" && stderr != file+tc.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}

// TestCheckConfigWarnsOfBackendsProbingTheSame: valid, so exit 0, but
// one server counted twice is said on stderr, with its line.
func TestCheckConfigWarnsOfBackendsProbingTheSame(t *testing.T) {
	isolateEnv(t)
	file := writeFile(t, "backends:\n  - name: a\n    url: http://127.0.0.1:1\n  - name: b\n    url: http://127.0.0.1:1/\n")
	code, stdout, stderr := runCheckConfig(t, "--config.file="+file)
	wantOut := file + ": ok, 2 backends, 1 warning\n"
	wantErr := "warning: " + file + ":5: backends[1].url: backend \"b\" has the same url and health probe as backend \"a\" (backends[0]): " +
		"one server counted twice in the readiness budget and asked twice in every fan-out round\n"
	if code != 0 || stdout != wantOut || stderr != wantErr {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0, %q and %q", code, stdout, stderr, wantOut, wantErr)
	}
}

// TestCheckConfigWithNothingToProbe: without probegate.yml and without
// --backend there is nothing to check, which is no "ok".
func TestCheckConfigWithNothingToProbe(t *testing.T) {
	isolateEnv(t)
	t.Chdir(t.TempDir())
	code, stdout, stderr := runCheckConfig(t)
	if code != 1 || stdout != "" || !strings.HasPrefix(stderr, "probegate.yml: not found, and no --backend given") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 naming probegate.yml", code, stdout, stderr)
	}
}

// TestCheckConfigWithAMissingNamedFile: a file named by --config.file (or
// its environment variable) must exist, --backend flags or not.
func TestCheckConfigWithAMissingNamedFile(t *testing.T) {
	isolateEnv(t)
	missing := filepath.Join(t.TempDir(), "missing.yml")
	for _, args := range [][]string{{"--config.file=" + missing}, {"--config.file=" + missing, "--backend=a=http://127.0.0.1:1"}} {
		code, stdout, stderr := runCheckConfig(t, args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, missing) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 naming %s", args, code, stdout, stderr, missing)
		}
	}
	t.Setenv("PROBEGATE_CONFIG_FILE", missing)
	if code, _, stderr := runCheckConfig(t); code != 1 || !strings.Contains(stderr, missing) {
		t.Errorf("PROBEGATE_CONFIG_FILE: exit %d, stderr %q; want 1 naming %s", code, stderr, missing)
	}
}

// TestCheckConfigEscapesControlCharacters: a key with an escape sequence
// (YAML's "\e") shows escaped in the problem naming it, never as the raw
// ESC that would clear the terminal, and each problem keeps its own line.
func TestCheckConfigEscapesControlCharacters(t *testing.T) {
	isolateEnv(t)
	file := writeFile(t, "\"bogus\\e[2J\": 1\nbackends:\n  - name: a\n    url: ftp://127.0.0.1:1\n")
	code, _, stderr := runCheckConfig(t, "--config.file="+file)
	if code != 1 || strings.ContainsAny(stderr, "\x1b\r") || !strings.Contains(stderr, `bogus\x1b[2J`) {
		t.Errorf("exit %d, stderr %q; want 1, the key escaped and no raw control character", code, stderr)
	}
}

// TestCheckConfigFindsASelfLoop: a backend at any path of one of
// probegate's own listeners (main, health, agent, admin) on the addresses the
// flags name (or on any address of this host when one names none) is
// refused, as start-up and reload refuse it. The admin listener is one
// only when something is served there.
func TestCheckConfigFindsASelfLoop(t *testing.T) {
	isolateEnv(t)
	for _, tc := range []struct {
		listen, url string
		code        int
		admin       string
	}{
		{"127.0.0.1:19797", "http://127.0.0.1:19797/fanout", 1, ""},
		{":19797", "http://localhost:19797/fanout/api", 1, ""},
		{"127.0.0.1:19797", "http://127.0.0.1:19797/api", 1, ""},
		{"127.0.0.1:19797", "http://127.0.0.1:19799/", 1, "--web.enable-admin-api"},
		{"127.0.0.1:19797", "http://127.0.0.1:19799/", 1, "--web.enable-lifecycle"},
		{"127.0.0.1:19797", "http://127.0.0.1:19799/", 0, ""},
		{"127.0.0.1:19797", "http://127.0.0.1:19798/ready", 1, ""},
		{"127.0.0.1:19797", "http://127.0.0.1:19795/", 1, ""},
		{"127.0.0.1:19797", "http://localhost:19795/fanout", 1, ""},
		{"127.0.0.1:19797", "http://127.0.0.1:19796/fanout", 0, ""},
	} {
		file := writeFile(t, "backends:\n  - name: self\n    url: "+tc.url+"\n")
		args := []string{"--config.file=" + file, "--web.listen-address=" + tc.listen,
			"--web.admin-listen-address=127.0.0.1:19799", "--web.health-listen-address=127.0.0.1:19798", "--web.agent-listen-address=127.0.0.1:19795"}
		if tc.admin != "" {
			args = append(args, tc.admin)
		}
		code, _, stderr := runCheckConfig(t, args...)
		want := file + `:3: backends[0].url: backend "self": ` + tc.url + " points at one of probegate's own listeners"
		if code != tc.code || (tc.code == 1 && !strings.HasPrefix(stderr, want)) {
			t.Errorf("listen %s, url %s, %s: exit %d, stderr %q; want %d and %q", tc.listen, tc.url, tc.admin, code, stderr, tc.code, want)
		}
	}
}

// TestCheckConfigNamesEveryProblemInOneRun: a file with an unknown key
// and a value validation refuses still has its HTTP clients, budget and
// the web configuration checked, and every problem is named at once, in
// the order of the file, those outside it last.
func TestCheckConfigNamesEveryProblemInOneRun(t *testing.T) {
	isolateEnv(t)
	web := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(web, []byte("tls_server_config:\n  cert_file: missing.pem\n  key_file: missing-key.pem\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, "backends:\n"+
		"  - {name: a, url: http://127.0.0.1:1}\n"+
		"  - {name: a, url: http://127.0.0.1:2}\n"+
		"readiness:\n  min_available: 5\n"+
		"http_client_config:\n  tls_config:\n    ca_file: missing-ca.pem\n"+
		"no_such_key: 1\n")
	code, _, stderr := runCheckConfig(t, "--config.file="+file, "--web.config.file="+web)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	want := []string{file + ":3: backends[1].name", file + ":5: readiness.min_available", file + ":6: http_client_config", file + ":9:", "--web.config.file " + web}
	if code != 1 || len(lines) != len(want) {
		t.Fatalf("exit %d, stderr:\n%s\nwant 1 and %d problems", code, stderr, len(want))
	}
	for i, prefix := range want {
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("problem %d is %q, want it to start %q", i+1, lines[i], prefix)
		}
	}
}
