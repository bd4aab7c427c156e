package readiness

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaks a goroutine: Run starts the
// maintenance manager's and the replica views' loops.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
