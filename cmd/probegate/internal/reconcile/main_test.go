package reconcile

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaks a goroutine: the prober's workers,
// discovery's file watcher.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
