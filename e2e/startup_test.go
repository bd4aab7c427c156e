package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
// for the first replica here; startProbegate waits 10 s for /healthz),
// and fails /ready on maintenance_store while the rest of it serves:
// "reading the store for the first time" while its first read waits,
// and, without a saved state, "not synced with the store yet" once that
// read failed (a second replica, whose request_timeout is 1s).
func TestStartsWithoutTheStore(t *testing.T) {
	waiting := startProbegate(t, "--config.file="+unreachableStoreConfig(t, "1m"), "--storage.path="+t.TempDir())
	failed := startProbegate(t, "--config.file="+unreachableStoreConfig(t, "1s"), "--storage.path="+t.TempDir())
	storeCheck := func(p *probegateProcess) (int, string, string) {
		t.Helper()
		return readyCheckNamed(t, p.base, "maintenance_store")
	}
	if code, status, output := storeCheck(waiting); code != http.StatusServiceUnavailable || status != "fail" || output != "reading the store for the first time" {
		t.Errorf("/ready = %d, maintenance_store %s %q while the first read waits; want 503 failing, reading the store for the first time", code, status, output)
	}
	waitFor(t, 10*time.Second, "the replica whose first read failed, with no saved state, fails /ready: not synced with the store yet", func() bool {
		code, status, output := storeCheck(failed)
		return code == http.StatusServiceUnavailable && status == "fail" && output == "not synced with the store yet"
	})
	for _, p := range []*probegateProcess{waiting, failed} {
		if out := p.output.String(); !strings.Contains(out, "not ready until the store answers") || strings.Contains(out, "without its entries") {
			t.Errorf("the start-up log does not say the one true thing:\n%s", out)
		}
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
