package probe

import (
	"bytes"
	"io"
	"log"
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
	// The hostile suite sends answers nobody asked for on purpose, and
	// net/http's Transport logs each one it meets through the standard
	// logger, which nothing can configure per transport. The suite checks
	// what the probe made of them; the lines would only be noise.
	log.SetOutput(withoutUnsolicited{os.Stderr})
	goleak.VerifyTestMain(m)
}

// withoutUnsolicited passes on every log line but net/http's notes of
// unsolicited answers.
type withoutUnsolicited struct{ w io.Writer }

func (f withoutUnsolicited) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("Unsolicited response received on idle HTTP channel")) {
		return len(p), nil
	}
	return f.w.Write(p)
}
