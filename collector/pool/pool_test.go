package pool

import (
	"fmt"
	"testing"

	"github.com/go-kit/log"
	commoncfg "github.com/prometheus/common/config"
	"go.uber.org/goleak"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/internal/testconfig"
)

// TestMain checks that no test leaks a goroutine: the pool's clients and
// Run start some.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// defaultProbe is the probe block of the test targets.
var defaultProbe = testconfig.Probe()

// probedTarget is a probed target with the default client configuration.
func probedTarget(name, url string) Target {
	return Target{Name: name, URL: url, Probe: defaultProbe, ClientConfig: commoncfg.DefaultHTTPClientConfig}
}

// namedTargets are targets with the given names on loopback ports where
// nothing listens, 19001 upwards, for tests that feed results by hand.
func namedTargets(names ...string) []Target {
	targets := make([]Target, len(names))
	for i, name := range names {
		targets[i] = probedTarget(name, fmt.Sprintf("http://127.0.0.1:%d", 19001+i))
	}
	return targets
}

// numberedTargets are n targets b0, b1, ….
func numberedTargets(n int) []Target {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("b%d", i)
	}
	return namedTargets(names...)
}

// newPool is a pool of targets under s that logs nothing.
func newPool(t *testing.T, targets []Target, s Settings) *Pool {
	t.Helper()
	return newLoggingPool(t, log.NewNopLogger(), targets, s)
}

// newLoggingPool is a pool of targets under s that logs to logger.
func newLoggingPool(t *testing.T, logger log.Logger, targets []Target, s Settings) *Pool {
	t.Helper()
	p := New(logger, nil)
	if err := p.Apply(targets, s); err != nil {
		t.Fatal(err)
	}
	return p
}

// feed records the same result n times on a backend.
func feed(b *Backend, r health.Result, n int) {
	for range n {
		b.RecordProbe(r)
	}
}

func names(backends []*Backend) []string {
	out := make([]string, len(backends))
	for i, b := range backends {
		out[i] = b.Name
	}
	return out
}

func TestSelectKeepsConfigOrderAndSkipsUnhealthy(t *testing.T) {
	p := newPool(t, numberedTargets(4), Settings{})
	bs := p.Backends()
	feed(bs[1], health.StatusResult(503), 3)
	feed(bs[2], health.StatusResult(404), 1)
	selected, _, configured, failOpen := p.Selection()
	if got, want := fmt.Sprint(names(selected)), "[b0 b2 b3]"; got != want || failOpen || configured != 4 {
		t.Errorf("Selection() = %s of %d failOpen=%v, want %s of 4 and not fail-open", got, configured, failOpen, want)
	}
}

func TestFailOpen(t *testing.T) {
	cases := []struct {
		name           string
		configured     int
		down           int
		panicThreshold float64
		wantSelected   int
		wantFailOpen   bool
	}{
		{"none in service selects every backend", 3, 3, 0, 3, true},
		{"default threshold 0 only when none", 3, 2, 0, 1, false},
		{"share below the threshold fails open", 4, 3, 50, 4, true},
		{"share at the threshold does not", 4, 2, 50, 2, false},
		{"an empty pool is not fail-open", 0, 0, 50, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newPool(t, numberedTargets(c.configured), Settings{PanicThreshold: c.panicThreshold})
			for _, b := range p.Backends()[:c.down] {
				feed(b, health.TransportResult("refused"), 3)
			}
			selected, _, configured, failOpen := p.Selection()
			if len(selected) != c.wantSelected || failOpen != c.wantFailOpen || configured != c.configured {
				t.Errorf("selected %d of %d failOpen=%v, want %d of %d and %v", len(selected), configured, failOpen, c.wantSelected, c.configured, c.wantFailOpen)
			}
			if s := p.Snapshot(); s.FailOpen != c.wantFailOpen || s.InService != c.configured-c.down {
				t.Errorf("snapshot fail-open %v in service %d, want %v and %d", s.FailOpen, s.InService, c.wantFailOpen, c.configured-c.down)
			}
			if b := p.Budget(); b.CurrentHealthy != c.configured-c.down {
				t.Errorf("budget counts %d healthy, want %d (fail-open does not count)", b.CurrentHealthy, c.configured-c.down)
			}
		})
	}
}

func TestApplyKeepsUnchangedBackendsAndResetsChangedOnes(t *testing.T) {
	p := newPool(t, numberedTargets(3), Settings{})
	for _, b := range p.Backends() {
		feed(b, health.StatusResult(503), 3)
	}

	next := numberedTargets(3)
	next[1].URL = "http://127.0.0.1:20001"
	next[2].Probe.Path = "/other"
	next = append(next, probedTarget("new", "http://127.0.0.1:20003"))
	if err := p.Apply(next, Settings{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]health.State{"b0": health.StateUnhealthy, "b1": health.StateUnknown, "b2": health.StateUnknown, "new": health.StateUnknown}
	got := map[string]health.State{}
	for _, b := range p.Snapshot().Backends {
		got[b.Name] = b.Health.State
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after reload states %v, want %v", got, want)
	}

	if err := p.Apply(numberedTargets(1), Settings{}); err != nil {
		t.Fatal(err)
	}
	if got := names(p.Backends()); fmt.Sprint(got) != "[b0]" {
		t.Errorf("after removing backends: %v", got)
	}
}

func TestApplyWithNewClientSettingsKeepsState(t *testing.T) {
	p := newPool(t, numberedTargets(1), Settings{})
	before := p.Backends()[0]
	feed(before, health.StatusResult(200), 1)
	next := numberedTargets(1)
	next[0].ClientConfig.FollowRedirects = !next[0].ClientConfig.FollowRedirects
	if err := p.Apply(next, Settings{}); err != nil {
		t.Fatal(err)
	}
	after := p.Backends()[0]
	s := after.Snapshot()
	if s.Health.State != health.StateHealthy || s.Probes != 1 {
		t.Errorf("client settings change lost state: %+v", s)
	}
	if after.Client == before.Client {
		t.Error("client settings changed but the backend kept its old client")
	}
}
