package discovery

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaks a goroutine, such as a discoverer's
// file watcher.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
