package web

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaks a goroutine: the reads held in
// flight, the loopback servers and the scrapes that share an answer.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
