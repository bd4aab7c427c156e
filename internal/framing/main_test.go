package framing

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaks a goroutine: the tests run real
// servers on loopback.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
