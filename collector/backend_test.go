package collector

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-kit/log"
)

// TestRecordLogsEachStateChangeOnce: ten probes, two state changes, two
// log lines, each naming what SPEC section 3 asks for.
func TestRecordLogsEachStateChangeOnce(t *testing.T) {
	var buf bytes.Buffer
	p, err := NewPool(poolTestConfig(1), log.NewLogfmtLogger(&buf))
	if err != nil {
		t.Fatal(err)
	}
	b := p.Backends()[0]
	feed(b, StatusResult(200), 5)
	feed(b, StatusResult(503), 5)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d log lines for 2 state changes:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{"from=unknown to=healthy class=ok status=200", "from=healthy to=unhealthy class=failed status=503"} {
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
	p, err := NewPool(poolTestConfig(1), log.NewLogfmtLogger(&buf))
	if err != nil {
		t.Fatal(err)
	}
	feed(p.Backends()[0], StatusResult(404), 3)
	out := buf.String()
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "level=warn") || !strings.Contains(out, "stays in service unverified") || !strings.Contains(out, "to=probe_unsupported") {
		t.Errorf("log for entering probe_unsupported:\n%s", out)
	}
}
