package pool

import (
	"bytes"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/collector/health"
)

// dialFailure is a probe result that failed to dial with errno, as a
// transport reports it.
func dialFailure(errno syscall.Errno) health.Result {
	return health.TransportError("", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", errno)})
}

// TestLocalProbeFailuresAreCountedAndLoggedOncePerCause: probes failing
// for probegate's own lack of descriptors or ports leave every backend
// as it was, count as local, and each cause is logged once whatever the
// number of probes and backends it fails; the backend's own failures
// still count as the backend's.
func TestLocalProbeFailuresAreCountedAndLoggedOncePerCause(t *testing.T) {
	var buf bytes.Buffer
	p := newLoggingPool(t, log.NewLogfmtLogger(&buf), namedTargets("b0", "b1"), Settings{})
	for _, b := range p.Backends() {
		feed(b, health.StatusResult(200), 2)
	}
	buf.Reset()
	for _, b := range p.Backends() {
		feed(b, dialFailure(syscall.EMFILE), 5)
		feed(b, dialFailure(syscall.EADDRNOTAVAIL), 5)
	}
	for _, b := range p.Backends() {
		s := b.Snapshot()
		if s.Health.State != health.StateHealthy || s.LastProbe.Class != health.ClassOK {
			t.Errorf("%s: %s with last probe %s after local failures, want healthy with its last ok probe", b.Name, s.Health.State, s.LastProbe.Class)
		}
		if s.Failures[health.ReasonLocal] != 10 || s.Failures[health.ReasonTransport] != 0 || s.Probes != 12 {
			t.Errorf("%s: %d local and %d transport failures of %d probes, want 10, 0 and 12", b.Name, s.Failures[health.ReasonLocal], s.Failures[health.ReasonTransport], s.Probes)
		}
	}
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 2 || !strings.Contains(out, `cause="too many open files"`) || !strings.Contains(out, `cause="cannot assign requested address"`) {
		t.Errorf("want one line per cause, got %d:\n%s", n, out)
	}

	b := p.Backends()[0]
	feed(b, dialFailure(syscall.ECONNREFUSED), 3)
	if s := b.Snapshot(); s.Health.State != health.StateUnhealthy || s.Failures[health.ReasonTransport] != 3 {
		t.Errorf("three refused connections left %s with %d transport failures, want unhealthy with 3", s.Health.State, s.Failures[health.ReasonTransport])
	}
}
