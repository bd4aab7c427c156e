package pool

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/passive"
	"github.com/probegate/probegate/collector/traffic"
)

// TestSinceAndDowntimeFollowTransitions: Since is the time of the last
// state change by the pool's clock, and the downtime adds up every stretch
// out of service, the current one included.
func TestSinceAndDowntimeFollowTransitions(t *testing.T) {
	p, clock := newClockedPool(t, nil, namedTargets("b0", "b1"), Settings{})
	b := p.Backends()[0]
	start := clock.Now()
	if s := p.Snapshot().Backends[0]; !s.Since.IsZero() || s.DowntimeAt(start) != 0 {
		t.Fatalf("before any change: since %v, downtime %v", s.Since, s.DowntimeAt(start))
	}
	feed(b, health.StatusResult(200), 1) // healthy at start
	clock.Advance(10 * time.Second)
	feed(b, health.StatusResult(503), 3) // out at start+10s
	clock.Advance(5 * time.Second)
	s := p.Snapshot()
	if got := s.Backends[0]; !got.Since.Equal(start.Add(10*time.Second)) || got.DowntimeAt(s.Time) != 5*time.Second {
		t.Fatalf("out for 5s: since %v (want %v), downtime %v", got.Since, start.Add(10*time.Second), got.DowntimeAt(s.Time))
	}
	feed(b, health.StatusResult(200), 2) // back at start+15s
	clock.Advance(time.Minute)
	feed(b, health.StatusResult(503), 3) // out again at start+75s
	clock.Advance(2 * time.Second)
	s = p.Snapshot()
	if got := s.Backends[0]; !got.Since.Equal(start.Add(75*time.Second)) || got.DowntimeAt(s.Time) != 7*time.Second {
		t.Fatalf("5s then 2s out: since %v, downtime %v, want 7s", got.Since, got.DowntimeAt(s.Time))
	}
}

// TestPassiveEjectionIsATransition: an ejection by passive health sets
// Since and starts a stretch of downtime like a probe would.
func TestPassiveEjectionIsATransition(t *testing.T) {
	p, clock := newClockedPool(t, nil, unprobedTargets(2), passiveSettings())
	b := p.Backends()[0]
	failTraffic(p, b, 3)
	ejectedAt := clock.Now()
	clock.Advance(4 * time.Second)
	s := p.Snapshot()
	if got := s.Backends[0]; !got.Since.Equal(ejectedAt) || got.DowntimeAt(s.Time) != 4*time.Second {
		t.Fatalf("ejected 4s ago: since %v (want %v), downtime %v", got.Since, ejectedAt, got.DowntimeAt(s.Time))
	}
	if w := s.Backends[0].Traffic.Window; w != (passive.Counts{}) {
		t.Errorf("window after ejection %+v, want empty", w)
	}
	p.Backends()[1].chargeTraffic(traffic.Outcome{})
	failTraffic(p, p.Backends()[1], 1)
	if w := p.Snapshot().Backends[1].Traffic.Window; w != (passive.Counts{Successes: 1, Failures: 1}) {
		t.Errorf("window of b1 %+v, want 1 success and 1 failure", w)
	}
}

// TestFailOpenChangesAreLoggedOnce: entering fail-open is one warning,
// leaving it one info line, however many probes and selections happen.
func TestFailOpenChangesAreLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	p := newLoggingPool(t, log.NewLogfmtLogger(&buf), namedTargets("b0", "b1"), Settings{})
	for _, b := range p.Backends() {
		feed(b, health.StatusResult(503), 5)
	}
	for range 3 {
		p.Selection()
	}
	feed(p.Backends()[0], health.StatusResult(200), 5)
	p.Selection()
	var lines []string
	for line := range strings.SplitSeq(buf.String(), "\n") {
		if strings.Contains(line, "fail") && strings.Contains(line, "open") {
			lines = append(lines, line)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "level=warn") || !strings.Contains(lines[0], "in_service=0 configured=2") ||
		!strings.Contains(lines[1], "level=info") || !strings.Contains(lines[1], "no longer fails open") {
		t.Fatalf("fail-open log lines:\n%s\nwhole log:\n%s", strings.Join(lines, "\n"), buf.String())
	}
}

// TestReloadLogsWhatChanged: a reload names the backends it added, removed
// and changed; an unchanged reload, and the first Apply, log nothing.
func TestReloadLogsWhatChanged(t *testing.T) {
	var buf bytes.Buffer
	p := newLoggingPool(t, log.NewLogfmtLogger(&buf), namedTargets("a", "b", "c"), Settings{})
	if err := p.Apply(namedTargets("a", "b", "c"), Settings{}); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatalf("first and unchanged Apply logged:\n%s", buf.String())
	}
	next := namedTargets("a", "b", "d", "e")
	next[1].URL = "http://127.0.0.1:19999"
	if err := p.Apply(next, Settings{}); err != nil {
		t.Fatal(err)
	}
	want := `msg="Backends changed" added=d,e removed=c changed=b backends=4`
	if !strings.Contains(buf.String(), want) {
		t.Errorf("reload log lacks %q:\n%s", want, buf.String())
	}

	// A change of thousands of backends names the first few and counts
	// the rest.
	buf.Reset()
	var many []string
	for i := range 5000 {
		many = append(many, fmt.Sprintf("n%04d", i))
	}
	if err := p.Apply(namedTargets(many...), Settings{}); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	if len(line) > 1000 || !strings.Contains(line, "n0019 and 4980 more") || !strings.Contains(line, "removed=a,b,d,e ") {
		t.Errorf("the change of 5000 backends logged %d bytes: %.500s", len(line), line)
	}
}
