package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// invalidCases are the fixtures testdata/invalid-<name>.yml: the line and
// field each must be blamed on, and words the message must contain.
var invalidCases = []struct {
	name  string
	line  int
	field string
	says  string
}{
	{"unknown-key", 3, "helth_check", `unknown key "helth_check"; valid keys: health_probe, pool`},
	{"unknown-key-nested", 4, "health_probe.timout", `unknown key "timout" (did you mean "timeout"?)`},
	{"unknown-key-backend", 6, "backends[1].helth_probe", `unknown key "helth_probe" (did you mean "health_probe"?)`},
	{"unknown-key-backend-probe", 6, "backends[0].health_probe.intervall", `unknown key "intervall" (did you mean "interval"?)`},
	{"unknown-key-http-client", 3, "http_client_config.tls_config.ca_fiel", `unknown key "ca_fiel" (did you mean "ca_file"?)`},
	{"unknown-key-backend-http-client", 6, "backends[0].http_client_config.bearer_tokn", `unknown key "bearer_tokn" (did you mean "bearer_token"?)`},
	{"duplicate-key", 4, "gate.drain", `"drain" is set twice; it is also set at line 2`},
	{"syntax", 3, "", "invalid YAML: did not find expected ',' or ']'"},
	// The YAML library names the line where the scalar being scanned
	// began; the problem is the tab on a later line.
	{"syntax-tab", 3, "", "invalid YAML: found a tab character that violates indentation"},
	{"syntax-tab-block", 5, "", "invalid YAML: found a tab character where an indentation space is expected"},
	{"syntax-tab-list", 6, "", "invalid YAML: found a tab character that violates indentation"},
	{"second-document", 3, "", "a second YAML document"},
	{"not-a-mapping", 1, "", "want a mapping of keys to values, got a list"},
	{"backends-not-a-list", 2, "backends", "want a list, got a mapping"},
	{"duplicate-name", 6, "backends[2].name", `"pdb-1" is already the name of backends[0]`},
	{"name-characters", 2, "backends[0].name", `"pdb 1" may contain only letters, digits`},
	{"name-missing", 4, "backends[1].name", "a backend needs a name"},
	{"url-missing", 2, "backends[0].url", "a backend needs a url"},
	{"url-scheme", 3, "backends[0].url", `"ftp://127.0.0.1:8081": want an absolute http:// or https:// URL`},
	{"url-relative", 3, "backends[0].url", `"/pdb-1": want an absolute http:// or https:// URL`},
	{"url-no-host", 3, "backends[0].url", `"http:///pdb-1" has no host`},
	{"url-query", 3, "backends[0].url", "has a query"},
	{"url-fragment", 3, "backends[0].url", "has a fragment"},
	{"url-credentials", 3, "backends[0].url", "carries credentials"},
	{"forward-header-hop-by-hop", 2, "fanout.forward_headers[1]", "hop-by-hop"},
	{"fanout-max-concurrent-zero", 2, "fanout.max_concurrent", "below 1"},
	{"url-credentials-unparseable", 3, "backends[0].url", "is not a URL"},
	{"probe-timeout-longer", 4, "health_probe.timeout", "10s is longer than the interval 5s"},
	{"probe-interval-shorter", 3, "health_probe.interval", "1s is shorter than the timeout 2s (the default health_probe.timeout)"},
	{"backend-probe-timeout-longer", 10, "backends[1].health_probe.timeout", "10s is longer than the interval 5s (health_probe.interval at line 2)"},
	{"backend-probe-interval-shorter", 6, "backends[0].health_probe.interval", "1s is shorter than the timeout 2s"},
	{"probe-path", 2, "health_probe.path", `"healthz" must start with "/"`},
	{"backend-probe-path", 5, "backends[0].health_probe.path", `"status" must start with "/"`},
	{"interval-zero", 2, "health_probe.interval", "0s is not positive"},
	{"duration-syntax", 2, "health_probe.interval", `not a valid duration string: "5": want a duration such as`},
	{"failures-zero", 2, "health_probe.failures", "0 is below 1"},
	{"failures-type", 2, "health_probe.failures", `want an integer, got "three"`},
	{"backend-successes-zero", 5, "backends[0].health_probe.successes", "0 is below 1"},
	{"readiness-both", 3, "readiness.max_unavailable", "set at most one of the two"},
	{"readiness-percent", 2, "readiness.max_unavailable", `"150%" is above 100%`},
	{"per-group-both", 4, "readiness.per_group.max_unavailable", "set at most one of the two"},
	{"per-group-percent", 2, "readiness.per_group.max_unavailable", `"101%" is above 100%`},
	{"group-characters", 7, "backends[1].group", `"shard 1" may contain only letters, digits, '_', '.' and '-'`},
	{"group-empty", 4, "backends[0].group", `"" may contain only letters`},
	{"group-long", 4, "backends[0].group", "is longer than 64 characters"},
	{"group-named-like-backend", 6, "backends[1].group", `group "db" is also the name of backends[0] (backends[0].name at line 2), which is not in it`},
	{"backend-named-like-group", 5, "backends[1].name", `"db" is also the name of the group of backends[0] (backends[0].group at line 4), which this backend is not in`},
	{"readiness-negative", 2, "readiness.min_available", `"-1" is negative`},
	{"panic-threshold", 2, "pool.panic_threshold", "150 is not a percentage between 0 and 100"},
	{"max-ejected-percent", 3, "passive_health.max_ejected_percent", "-5 is not a percentage between 0 and 100"},
	{"min-success-ratio", 3, "passive_health.min_success_ratio", "80 is not a ratio between 0 and 1"},
	{"passive-window-zero", 2, "passive_health.window", "0s is not positive"},
	{"passive-max-failures-zero", 2, "passive_health.max_failures", "0 is below 1"},
	{"passive-min-requests-zero", 2, "passive_health.min_requests", "0 is below 1"},
	{"merge", 3, "fanout.merge", `"xml" is not a merge format: want one of json_array, ndjson`},
	{"bytes-zero", 2, "fanout.max_request_bytes", "0 is not a positive size"},
	{"bytes-syntax", 2, "fanout.max_response_bytes", `"64 megabytes" is not a size`},
	{"fanout-timeout-zero", 2, "fanout.timeout", "0s is not positive"},
	{"min-contributors-zero", 2, "fanout.min_contributors", "0% would accept a round nobody contributed to"},
	{"min-contributors-syntax", 2, "fanout.min_contributors", `"half" is neither an integer nor a percentage`},
	{"max-hops-zero", 2, "fanout.max_hops", "0 is below 1"},
	{"max-buffered-below-response", 3, "fanout.max_buffered_bytes", "16MiB is less than one answer may take (fanout.max_response_bytes at line 2)"},
	{"outlier-failure-gap", 4, "fanout.outlier_detection.failure_gap", "1.5 is not a gap between failure ratios"},
	{"outlier-latency-factor", 3, "fanout.outlier_detection.latency_factor", "1 would eject backends no slower than their peers"},
	{"outlier-max-ejection", 4, "fanout.outlier_detection.max_ejection", "10s is shorter than fanout.outlier_detection.base_ejection (1m)"},
	{"stragglers-factor", 4, "fanout.stragglers.factor", "1 would cut backends no slower than the median of their peers: want more than 1"},
	{"hedge-after", 3, "fanout.hedge.after", `"soon" is neither auto nor a duration such as 50ms`},
	{"probing-shared-file-store", 3, "probing.shared.enabled", "needs maintenance.store: etcd, where the replicas publish their verdicts"},
	{"probing-vantage-points", 4, "probing.shared.vantage_points", "17 is not between 1 and 16"},
	{"hedge-after-zero", 4, "fanout.hedge.after", "0s is not positive: want auto or a duration above 0s"},
	{"hedge-after-timeout", 5, "fanout.hedge.after", "2s is not shorter than fanout.timeout (2s): no hedge would ever be sent"},
	{"hedge-min-after-timeout", 5, "fanout.hedge.min_after", "3s is not shorter than fanout.timeout (2s): no hedge would ever be sent"},
	{"hedge-max-percent", 4, "fanout.hedge.max_percent", "120 is not a percentage: want 0 to 100"},
	{"failover-type", 2, "fanout.failover", `want true or false, got "sometimes"`},
	{"stragglers-min-wait-timeout", 5, "fanout.stragglers.min_wait", "2s is not shorter than fanout.timeout (2s): no straggler would ever be cut"},
	{"shutdown-timeout-zero", 3, "gate.shutdown_timeout", "0s is not positive"},
	{"check-interval-zero", 2, "gate.check_interval", "0s is not positive"},
	{"http-client-config", 3, "http_client_config", "at most one of basic_auth, oauth2, bearer_token & bearer_token_file"},
	{"backend-http-client-config", 5, "backends[0].http_client_config.tls_config", "at most one of ca, ca_file & ca_ref"},
	{"probe-kind", 2, "health_probe.kind", `"udp" is not a probe kind: want one of http, tcp, grpc`},
	{"backend-probe-kind", 5, "backends[0].health_probe.kind", `"GRPC" is not a probe kind`},
	{"probe-method", 2, "health_probe.method", `"POST" is not a probe method: want GET or HEAD`},
	{"probe-body-regexp", 2, "health_probe.expect_body_regexp", `"ok(" is not a regular expression: error parsing regexp: missing closing )`},
	{"probe-head-body", 3, "health_probe.expect_body_regexp", "a HEAD probe gets no body"},
	{"probe-header-name", 3, "health_probe.headers.Bad Name", `"Bad Name" is not a valid HTTP header name`},
	{"probe-header-value", 3, "health_probe.headers.X-Token", "a character an HTTP header cannot carry"},
	{"probe-tcp-headers", 3, "health_probe.headers", "applies to http probes only, and this one's kind is tcp"},
	{"backend-probe-grpc-path", 6, "backends[0].health_probe.path", "applies to http probes only, and this one's kind is grpc"},
	{"backend-probe-tcp-method", 6, "backends[0].health_probe.method", "applies to http probes only, and this one's kind is tcp"},
	{"backend-probe-grpc-keep-alive", 6, "backends[0].health_probe.keep_alive", "applies to http probes only, and this one's kind is grpc"},
	{"probe-http-grpc-service", 2, "health_probe.grpc_service", "applies to grpc probes only, and this one's kind is http"},
	{"tls-version", 3, "http_client_config.tls_config.min_version", "unknown TLS version: TLS99"},
	{"file-sd-unknown-key", 3, "file_sd_configs[0].refresh_intervall", `unknown key "refresh_intervall" (did you mean "refresh_interval"?)`},
	{"dns-sd-no-port", 2, "dns_sd_configs[0]", "a port is required in DNS-SD configs for all record types except SRV"},
	{"max-discovered-backends-zero", 2, "max_discovered_backends", "below 1"},
	{"relabel-target-label", 4, "relabel_configs[0]", "relabel configuration for replace action requires 'target_label' value"},
	{"maintenance-store", 2, "maintenance.store", `"consul" is not a store: want file or etcd`},
	{"maintenance-max-ttl-zero", 2, "maintenance.max_ttl", "0s is not positive"},
	{"maintenance-etcd-no-endpoints", 4, "maintenance.etcd.endpoints", "at least one endpoint is required with maintenance.store: etcd"},
	{"maintenance-etcd-endpoint-credentials", 6, "maintenance.etcd.endpoints[1]", `"http://root:xxxxx@127.0.0.1:2380": want http://host:port or https://host:port, without credentials`},
	{"maintenance-etcd-mixed-schemes", 4, "maintenance.etcd.endpoints", "mixes http:// and https:// endpoints"},
	{"maintenance-etcd-http-tls", 5, "maintenance.etcd.tls_config", "the endpoints are http://, which never use TLS"},
	{"maintenance-etcd-http-password", 6, "maintenance.etcd.password", "would be sent in clear text to http:// endpoints"},
	{"maintenance-etcd-prefix", 4, "maintenance.etcd.prefix", `"probegate/default": want a key prefix that starts with /`},
	{"peer-relative-file-store", 3, "readiness.peer_relative", "needs maintenance.store: etcd"},
}

func TestInvalidFixtures(t *testing.T) {
	for _, tc := range invalidCases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join("testdata", "invalid-"+tc.name+".yml")
			c, err := Load(path)
			if c != nil {
				t.Errorf("Load returned a configuration along with the error")
			}
			var cfgErr *Error
			if !errors.As(err, &cfgErr) {
				t.Fatalf("Load(%s) = %v, want a *config.Error", path, err)
			}
			if len(cfgErr.Problems) != 1 {
				t.Fatalf("got %d problems, want 1:\n%v", len(cfgErr.Problems), err)
			}
			p := cfgErr.Problems[0]
			if p.File != path || p.Line != tc.line || p.Field != tc.field {
				t.Errorf("problem at %s:%d field %q, want %s:%d field %q\n%v", p.File, p.Line, p.Field, path, tc.line, tc.field, err)
			}
			if !contains(p.Message, tc.says) {
				t.Errorf("message %q does not say %q", p.Message, tc.says)
			}
			prefix := fmt.Sprintf("%s:%d: ", path, tc.line)
			if tc.field != "" {
				prefix += tc.field + ": "
			}
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
		})
	}
}

// TestEveryInvalidFixtureHasACase keeps fixtures and cases in step.
func TestEveryInvalidFixtureHasACase(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid-*.yml")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, tc := range invalidCases {
		known[tc.name] = true
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "invalid-"), ".yml")
		if !known[name] {
			t.Errorf("%s has no case in invalidCases", f)
		}
	}
	if len(files) != len(invalidCases) {
		t.Errorf("%d fixtures, %d cases", len(files), len(invalidCases))
	}
}

func TestEveryProblemIsReported(t *testing.T) {
	data := "health_probe:\n  failures: 0\nbackends:\n  - name: a\n    url: ftp://x\n  - name: a\n    url: http://y\n"
	_, err := parse([]byte(data), "probegate.yml")
	want := strings.Join([]string{
		"probegate.yml:2: health_probe.failures: 0 is below 1: want at least 1",
		`probegate.yml:5: backends[0].url: "ftp://x": want an absolute http:// or https:// URL such as http://127.0.0.1:8081`,
		`probegate.yml:6: backends[1].name: "a" is already the name of backends[0]; names must be unique`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}

// TestInvalidURLErrorsHidePasswords: a backend URL with a password is
// refused without the password appearing in the error, which is logged,
// printed by check-config and answered to a reload request.
func TestInvalidURLErrorsHidePasswords(t *testing.T) {
	for _, name := range []string{"url-credentials", "url-credentials-unparseable"} {
		_, err := Load(filepath.Join("testdata", "invalid-"+name+".yml"))
		if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "@127.0.0.1:80") {
			t.Errorf("%s: error %v, want one that names the URL without its password", name, err)
		}
	}
}

// TestInvalidEtcdEndpointHidesPassword: an etcd endpoint with a password
// is refused without the password appearing in the error.
func TestInvalidEtcdEndpointHidesPassword(t *testing.T) {
	_, err := Load(filepath.Join("testdata", "invalid-maintenance-etcd-endpoint-credentials.yml"))
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "root:xxxxx@127.0.0.1:2380") {
		t.Errorf("error %v, want one that names the endpoint without its password", err)
	}
}

// TestDecodingProblemsHideNothing: an unknown key or a value that does not
// decode (a bad duration or size, which stops the YAML decoder) is named
// together with every problem after it, each on its own line.
func TestDecodingProblemsHideNothing(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"an unknown key and a bad url",
			"health_probe:\n  intervall: 5s\nbackends:\n  - {name: a, url: ftp://x}\n",
			[]string{
				`probegate.yml:2: health_probe.intervall: unknown key "intervall" (did you mean "interval"?)`,
				`probegate.yml:4: backends[0].url: "ftp://x": want an absolute http:// or https:// URL`,
			}},
		{"a bad duration and a bad size",
			"health_probe:\n  interval: 5\nfanout:\n  max_response_bytes: 64 megabytes\nbackends:\n  - {name: a, url: http://x}\n",
			[]string{
				`probegate.yml:2: health_probe.interval: not a valid duration string: "5"`,
				`probegate.yml:4: fanout.max_response_bytes: "64 megabytes" is not a size`,
			}},
		{"a bad duration, an unknown key after it and a bad value",
			"gate:\n  drain: soon\n  drian: 5s\npool:\n  panic_threshold: 150\n",
			[]string{
				`probegate.yml:2: gate.drain: not a valid duration string: "soon"`,
				`probegate.yml:3: gate.drian: unknown key "drian" (did you mean "drain"?)`,
				`probegate.yml:5: pool.panic_threshold: 150 is not a percentage between 0 and 100`,
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.data), "probegate.yml")
			var cfgErr *Error
			if !errors.As(err, &cfgErr) {
				t.Fatalf("got %v, want a *config.Error", err)
			}
			if len(cfgErr.Problems) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(cfgErr.Problems), len(tc.want), err)
			}
			for i, p := range cfgErr.Problems {
				if !strings.HasPrefix(p.String(), tc.want[i]) {
					t.Errorf("problem %d is %q, want it to start with %q", i, p, tc.want[i])
				}
			}
		})
	}
}
