package debugprobe

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaks a goroutine: a debug probe's
// connections and a gRPC probe's dial must end with it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
