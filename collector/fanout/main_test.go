package fanout

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaks a goroutine: every round starts one
// per backend, and the readmission tests run the pool's Run.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
