package pool

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/collector/health"
)

// TestRecordLogsEachStateChangeOnce: ten probes, two state changes, two
// log lines, each naming the backend, its url and probe path, the states
// left and entered, and the result that caused the change.
func TestRecordLogsEachStateChangeOnce(t *testing.T) {
	var buf bytes.Buffer
	// Two backends, so that b0 going out does not make the pool fail open.
	p := newLoggingPool(t, log.NewLogfmtLogger(&buf), namedTargets("b0", "b1"), Settings{})
	b := p.Backends()[0]
	feed(b, health.StatusResult(200), 5)
	feed(b, health.StatusResult(503), 5)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d log lines for 2 state changes:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{"from=unknown to=healthy verified=true class=ok status=200", "from=healthy to=unhealthy verified=true class=failed status=503"} {
		for _, key := range []string{"backend=b0", "url=http://127.0.0.1:19001", "probe_path=/healthz", want} {
			if !strings.Contains(lines[i], key) {
				t.Errorf("line %d %q lacks %q", i+1, lines[i], key)
			}
		}
	}
}

// TestEnteringProbeUnsupportedWarns: the refused probe path is a warning
// that says the backend stays in service unverified.
func TestEnteringProbeUnsupportedWarns(t *testing.T) {
	var buf bytes.Buffer
	p := newLoggingPool(t, log.NewLogfmtLogger(&buf), namedTargets("b0"), Settings{})
	feed(p.Backends()[0], health.StatusResult(404), 3)
	out := buf.String()
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "level=warn") || !strings.Contains(out, "stays in service unverified") || !strings.Contains(out, "to=probe_unsupported verified=false") {
		t.Errorf("log for entering probe_unsupported:\n%s", out)
	}
}
