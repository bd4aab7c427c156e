package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probegate/probegate/internal/deadport"
)

// TestStartsWithoutTheStore: a replica whose etcd cluster cannot be
// reached listens at once, however long its request_timeout (a minute
// here; startProbegate waits 10 s for /healthz), and without a saved
// state fails /ready on maintenance_store, "not synced with the store
// yet", while the rest of it serves.
func TestStartsWithoutTheStore(t *testing.T) {
	etcd, release, err := deadport.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release() })
	path := filepath.Join(t.TempDir(), "probegate.yml")
	config := fmt.Sprintf(`backends:
  - {name: a, url: %q}
maintenance:
  store: etcd
  etcd: {endpoints: [%q], dial_timeout: 1m, request_timeout: 1m}
`, okBackend(t).URL, etcd)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProbegate(t, "--config.file="+path, "--storage.path="+t.TempDir())
	resp, err := http.Get(p.base + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "not synced with the store yet") {
		t.Errorf("/ready = %d %s; want 503 failing maintenance_store, not synced with the store yet", resp.StatusCode, body)
	}
	if out := p.output.String(); !strings.Contains(out, "not ready until the store answers") || strings.Contains(out, "without its entries") {
		t.Errorf("the start-up log does not say the one true thing:\n%s", out)
	}
}
