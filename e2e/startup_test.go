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

// unreachableStoreConfig writes a configuration of one healthy backend, a,
// whose maintenance is kept in an etcd cluster at a port that refuses
// connections, with the given request_timeout, and returns its path.
func unreachableStoreConfig(t *testing.T, requestTimeout string) string {
	t.Helper()
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
  etcd: {endpoints: [%q], dial_timeout: %s, request_timeout: %s}
`, okBackend(t).URL, etcd, requestTimeout, requestTimeout)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStartsWithoutTheStore: a replica whose etcd cluster cannot be
// reached listens at once, however long its request_timeout (a minute
// here; startProbegate waits 10 s for /healthz), and without a saved
// state fails /ready on maintenance_store, "not synced with the store
// yet", while the rest of it serves.
func TestStartsWithoutTheStore(t *testing.T) {
	p := startProbegate(t, "--config.file="+unreachableStoreConfig(t, "1m"), "--storage.path="+t.TempDir())
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

// TestCLISaysTheStoreIsUnavailable: `probegate maintenance start` against
// a probegate whose etcd cannot be reached reports what probegate
// answered, that its store is unavailable, with exit 4, and never that
// probegate cannot be reached.
func TestCLISaysTheStoreIsUnavailable(t *testing.T) {
	p := startProbegate(t, "--config.file="+unreachableStoreConfig(t, "1s"), "--storage.path="+t.TempDir(), "--web.enable-admin-api")
	code, out := cli(t, p.admin, "start", "a", "--reason=disk", "--force")
	if code != 4 || !strings.Contains(out, "maintenance store is unavailable") || strings.Contains(out, "cannot reach") {
		t.Errorf("maintenance start with etcd unreachable: exit %d, output %q; want 4 and probegate's word that its store is unavailable", code, out)
	}
}
