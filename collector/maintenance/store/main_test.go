package store

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaks a goroutine: the etcd client runs
// loops of its own, and a test here waits on an open in another one.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
