package maintenance

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaks a goroutine: the manager and the
// replica views run loops of their own.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
