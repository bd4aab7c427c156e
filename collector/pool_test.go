package collector

import (
	"fmt"
	"testing"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/config"
)

// poolTestConfig is a pool of n backends b0, b1, … (nothing listens;
// these tests feed results by hand).
func poolTestConfig(n int) *config.Config {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("b%d", i)
	}
	return testConfig(namedBackends(names...)...)
}

func newTestPool(t *testing.T, cfg *config.Config) *Pool {
	t.Helper()
	p, err := NewPool(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// feed records the same result n times on a backend.
func feed(b *Backend, r Result, n int) {
	for range n {
		b.Record(r)
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
	p := newTestPool(t, poolTestConfig(4))
	bs := p.Backends()
	feed(bs[1], StatusResult(503), 3)
	feed(bs[2], StatusResult(404), 1)
	selected, failOpen := p.Select()
	if got, want := fmt.Sprint(names(selected)), "[b0 b2 b3]"; got != want || failOpen {
		t.Errorf("Select() = %s failOpen=%v, want %s and not fail-open", got, failOpen, want)
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
			cfg := poolTestConfig(c.configured)
			cfg.Pool.PanicThreshold = c.panicThreshold
			p := newTestPool(t, cfg)
			for _, b := range p.Backends()[:c.down] {
				feed(b, TransportResult("refused"), 3)
			}
			selected, failOpen := p.Select()
			if len(selected) != c.wantSelected || failOpen != c.wantFailOpen {
				t.Errorf("selected %d failOpen=%v, want %d and %v", len(selected), failOpen, c.wantSelected, c.wantFailOpen)
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
	cfg := poolTestConfig(3)
	p := newTestPool(t, cfg)
	for _, b := range p.Backends() {
		feed(b, StatusResult(503), 3)
	}

	next := poolTestConfig(3)
	next.Backends[1].URL = "http://127.0.0.1:20001"
	path := "/other"
	next.Backends[2].HealthProbe.Path = &path
	next.Backends = append(next.Backends, config.Backend{Name: "new", URL: "http://127.0.0.1:20003"})
	if err := p.Apply(next); err != nil {
		t.Fatal(err)
	}
	want := map[string]State{"b0": StateUnhealthy, "b1": StateUnknown, "b2": StateUnknown, "new": StateUnknown}
	got := map[string]State{}
	for _, b := range p.Snapshot().Backends {
		got[b.Name] = b.Health.State
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after reload states %v, want %v", got, want)
	}

	removed := poolTestConfig(1)
	if err := p.Apply(removed); err != nil {
		t.Fatal(err)
	}
	if got := names(p.Backends()); fmt.Sprint(got) != "[b0]" {
		t.Errorf("after removing backends: %v", got)
	}
}

func TestApplyWithNewClientSettingsKeepsState(t *testing.T) {
	cfg := poolTestConfig(1)
	p := newTestPool(t, cfg)
	feed(p.Backends()[0], StatusResult(200), 1)
	next := poolTestConfig(1)
	next.HTTPClientConfig.FollowRedirects = true
	if err := p.Apply(next); err != nil {
		t.Fatal(err)
	}
	s := p.Snapshot().Backends[0]
	if s.Health.State != StateHealthy || s.Probes != 1 {
		t.Errorf("client settings change lost state: %+v", s)
	}
}
