package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDiscoveredPasswordsAreNeverShown: a file_sd target whose address
// carries a password, and labels holding URLs with passwords, are
// reported without the passwords: the log shows "xxxxx" where each was.
func TestDiscoveredPasswordsAreNeverShown(t *testing.T) {
	good := okBackend(t)
	dir := t.TempDir()
	writeAtomically(t, filepath.Join(dir, "sd.yml"), fmt.Sprintf(`
- targets: ["alice:hunter2@127.0.0.1:28001"]
- targets: [%q]
  labels: {origin: "https://bob:s3cret@registry.internal/v1"}
- targets: ["127.0.0.1:28002"]
  labels: {__scheme__: "http://carol:pa55@127.0.0.1"}
`, hostPort(t, good.URL)))
	cfg := filepath.Join(dir, "probegate.yml")
	if err := os.WriteFile(cfg, []byte("file_sd_configs: [{files: [sd.yml]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProbegate(t, "--config.file="+cfg, "--discovery.update-interval=100ms")
	waitFor(t, 10*time.Second, "the bad targets reported", func() bool {
		return strings.Count(p.output.String(), ":xxxxx@") >= 2
	})
	for _, secret := range []string{"hunter2", "s3cret", "pa55"} {
		if strings.Contains(p.output.String(), secret) {
			t.Errorf("the log shows the password %s:\n%s", secret, p.output.String())
		}
	}
}
