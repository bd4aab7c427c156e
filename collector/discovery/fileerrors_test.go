package discovery

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/discovery/file"

	"github.com/probegate/probegate/config"
)

// TestFileDiscoveryErrorsQuoteNoContent: a file_sd file that does not
// parse is reported (its path and what is wrong, with the line), but no
// error quotes the file's content, which may hold credentials: YAML's
// and JSON's parsers echo a value, a key or a character of it.
func TestFileDiscoveryErrorsQuoteNoContent(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		// A scalar where a list belongs: YAML echoes the value.
		"scalar.yml": "hunter2-scalar-secret\n",
		// An unknown key: YAML names it.
		"key.yml": "- targets: ['127.0.0.1:1']\n  hunter2-key-secret: x\n",
		// A JSON syntax error: the character is quoted, Z.
		"syntax.json": `[{"targets": ["127.0.0.1:1"]}, Zhunter2]`,
		// A JSON key that is not a field.
		"field.json": `[{"targets": ["127.0.0.1:1"], "hunter2-field-secret": 1}]`,
	}
	var patterns []string
	for name, content := range files {
		write(t, filepath.Join(dir, name), content)
	}
	patterns = append(patterns, filepath.Join(dir, "*.yml"), filepath.Join(dir, "*.json"))
	cfg := config.Default()
	cfg.FileSDConfigs = []*file.SDConfig{{Files: patterns, RefreshInterval: file.DefaultSDConfig.RefreshInterval}}
	r := startDiscovery(t, cfg)

	deadline := time.Now().Add(10 * time.Second)
	for gathered(t, r.reg, "prometheus_sd_file_read_errors_total") < float64(len(files)) && time.Now().Before(deadline) {
		select {
		case <-r.updates:
		case <-time.After(50 * time.Millisecond):
		}
	}
	logs := r.logs.String()
	for name := range files {
		if !strings.Contains(logs, filepath.Join(dir, name)) {
			t.Errorf("the error of %s is not reported:\n%s", name, logs)
		}
	}
	if strings.Contains(logs, "hunter2") || strings.Contains(logs, "'Z'") {
		t.Errorf("a discovery error quotes the file's content:\n%s", logs)
	}
	// What is wrong, and where, is still said.
	for _, want := range []string{"line 1: cannot unmarshal !!str … into", "line 2: field … not found", `json: unknown field …`, "invalid character … looking for beginning of value"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the errors do not say %q:\n%s", want, logs)
		}
	}
}
