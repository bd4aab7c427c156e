package probe

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaks a goroutine. When the probing
// benchmark re-executes the test binary as its backend server, it serves
// instead, so that the server's CPU and memory are not the prober's.
func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) != "" {
		os.Exit(runBenchServer())
	}
	goleak.VerifyTestMain(m)
}
