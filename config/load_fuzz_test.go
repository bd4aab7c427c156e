package config

import (
	"errors"
	"testing"
)

// FuzzParse checks the configuration loader on any bytes: it never
// panics, returns a configuration or an error but never both, explains
// a refusal with at least one problem, and a configuration it accepts
// marshals back to YAML that it accepts again.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		"backends: [{name: a, url: 'http://127.0.0.1:1'}]\n",
		"health_probe: {interval: 1s, timeout: 2s}\nbackends: [{name: a, url: 'http://admin:pw@h:1'}]\n",
		"readiness: {min_available: 50%, max_unavailable: 1}\n",
		"fanout: {enabled: true, max_response_bytes: 1KiB, merge: ndjson}\n",
		"file_sd_configs: [{files: [a.yml]}]\nrelabel_configs: [{source_labels: [x], regex: '(', action: drop}]\n",
		"a: &a [*a]\n",
		"---\n---\n",
		"backends:\n  - name: a\n    url: http://h:1\n    health_probe: {kind: grpc, path: /x}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parse(data, "fuzz/probegate.yml")
		if (cfg == nil) == (err == nil) {
			t.Fatalf("parse(%q) = %v, %v: want a configuration or an error", data, cfg, err)
		}
		if err != nil {
			if configErr := (*Error)(nil); errors.As(err, &configErr) && len(configErr.Problems) == 0 {
				t.Fatalf("parse(%q) refused it without naming a problem", data)
			}
			return
		}
		out, err := cfg.RedactedYAML()
		if err != nil {
			t.Fatalf("parse(%q) accepted a configuration that does not marshal: %v", data, err)
		}
		if _, err := decode(out, "fuzz/probegate.yml"); err != nil {
			t.Fatalf("the YAML of an accepted configuration does not decode:\n%s\n%v", out, err)
		}
	})
}
