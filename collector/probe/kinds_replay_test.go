package probe

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/go-kit/log"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/deadport"
)

// replayRig answers each step's name with a real probe of that kind:
// the server behind it is set to the answer first, or the probe goes to a
// backend that gives it.
type replayRig func(t *testing.T, answer string) health.Result

func grpcReplayRig(t *testing.T) replayRig {
	script := &scriptedHealth{}
	url := startGRPC(t, script, nil)
	live := newTarget(t, url, grpcKind(""), config.HTTPClientConfig{})
	// A probe that hangs lasts its timeout: a short one of its own, so
	// that the others keep a timeout no loaded machine reaches.
	hang := newTarget(t, url, withTimeout(grpcKind(""), 100*time.Millisecond), config.HTTPClientConfig{})
	dead := newTarget(t, deadport.URL(t), grpcKind(""), config.HTTPClientConfig{})
	return func(t *testing.T, answer string) health.Result {
		switch answer {
		case "dead":
			return runTarget(dead)
		case "hang":
			script.set(answer)
			return runTarget(hang)
		}
		script.set(answer)
		return runTarget(live)
	}
}

func tcpReplayRig(t *testing.T) replayRig {
	tcp := func(p *config.HealthProbe) { p.Kind = config.KindTCP }
	srv := startServer(t, func(http.ResponseWriter, *http.Request) {})
	targets := map[string]*probeTarget{
		"accept": newTarget(t, srv.URL, tcp, config.HTTPClientConfig{}),
		"refuse": newTarget(t, deadport.URL(t), tcp, config.HTTPClientConfig{}),
	}
	return func(t *testing.T, answer string) health.Result { return runTarget(targets[answer]) }
}

func httpBodyReplayRig(t *testing.T) replayRig {
	var status atomic.Int64
	var body atomic.Value
	srv := startServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(status.Load()))
		io.WriteString(w, body.Load().(string))
	})
	target := newTarget(t, srv.URL, func(p *config.HealthProbe) { p.ExpectBodyRegexp = `^up$` }, config.HTTPClientConfig{})
	answers := map[string]struct {
		status int
		body   string
	}{"up": {200, "up"}, "mismatch": {200, "starting"}, "404": {404, "up"}, "503": {503, "up"}}
	return func(t *testing.T, answer string) health.Result {
		a, ok := answers[answer]
		if !ok {
			t.Fatalf("no answer %q", answer)
		}
		status.Store(int64(a.status))
		body.Store(a.body)
		return runTarget(target)
	}
}

func repeat(n int, answers ...string) []string {
	var out []string
	for range n {
		out = append(out, answers...)
	}
	return out
}

// TestKindsReplayStateMachine replays the state machine's behaviours
// (docs/design.md, "The backend state machine") through each kind where
// they apply: every step is a real probe of a real loopback server,
// classified by the kind and fed to health.Health.Step with thresholds
// 3/2. The numbers are those of the behaviours in docs/design.md.
func TestKindsReplayStateMachine(t *testing.T) {
	rigs := map[string]func(*testing.T) replayRig{"grpc": grpcReplayRig, "tcp": tcpReplayRig, "http": httpBodyReplayRig}
	cases := []struct {
		kind, name string
		answers    []string
		state      health.State
		reachable  bool
		verified   bool
	}{
		{"grpc", "1 no health service stays in service unverified", repeat(5, "UNIMPLEMENTED"), health.StateProbeUnsupported, true, false},
		{"grpc", "1 an unknown service name stays in service unverified", repeat(5, "NOT_FOUND"), health.StateProbeUnsupported, true, false},
		{"grpc", "2 a timeout and a dead moment among refusals do not strand", []string{"UNIMPLEMENTED", "UNIMPLEMENTED", "hang", "dead", "UNIMPLEMENTED"}, health.StateProbeUnsupported, true, false},
		{"grpc", "3 NOT_SERVING latches, then UNIMPLEMENTED counts", repeat(3, "UNIMPLEMENTED", "NOT_SERVING"), health.StateUnhealthy, true, true},
		{"grpc", "4 one NOT_SERVING and runs of refusals keep it out", append([]string{"SERVING"}, repeat(3, "NOT_SERVING", "NOT_FOUND", "NOT_FOUND", "NOT_FOUND")...), health.StateUnhealthy, true, true},
		{"grpc", "5 NOT_SERVING three times takes a serving backend out", []string{"SERVING", "NOT_SERVING", "NOT_SERVING", "NOT_SERVING"}, health.StateUnhealthy, true, true},
		{"grpc", "6 dead from the start is out and unreachable", repeat(3, "dead"), health.StateUnhealthy, false, false},
		{"grpc", "6 any answer makes it reachable again", append(repeat(3, "dead"), "UNIMPLEMENTED"), health.StateUnhealthy, true, false},
		{"grpc", "7 ok, failure, ok does not recover", []string{"SERVING", "NOT_SERVING", "NOT_SERVING", "NOT_SERVING", "SERVING", "NOT_SERVING", "SERVING"}, health.StateUnhealthy, true, true},
		{"grpc", "7 recovery at exactly successes", []string{"SERVING", "NOT_SERVING", "NOT_SERVING", "NOT_SERVING", "SERVING", "SERVING"}, health.StateHealthy, true, true},
		{"grpc", "8 one short of failures changes nothing", []string{"SERVING", "NOT_SERVING", "hang"}, health.StateHealthy, true, true},
		{"grpc", "11 a verified backend answering UNIMPLEMENTED is taken out", []string{"SERVING", "UNIMPLEMENTED", "UNIMPLEMENTED", "UNIMPLEMENTED"}, health.StateUnhealthy, true, true},
		{"tcp", "6 dead from the start is out and unreachable", repeat(3, "refuse"), health.StateUnhealthy, false, false},
		{"tcp", "6 a connection makes it reachable again", append(repeat(3, "refuse"), "accept"), health.StateUnhealthy, true, true},
		{"tcp", "7 recovery at exactly successes", append(repeat(3, "refuse"), "accept", "accept"), health.StateHealthy, true, true},
		{"tcp", "7 ok, failure, ok does not recover", append(repeat(3, "refuse"), "accept", "refuse", "accept"), health.StateUnhealthy, true, true},
		{"tcp", "8 one short of failures changes nothing", []string{"accept", "refuse", "refuse"}, health.StateHealthy, true, true},
		{"tcp", "8 ejection at exactly failures", []string{"accept", "refuse", "refuse", "refuse"}, health.StateUnhealthy, false, true},
		{"http", "1 a refused probe path stays in service unverified", repeat(5, "404"), health.StateProbeUnsupported, true, false},
		{"http", "3 a body mismatch latches, then 404 counts", repeat(3, "404", "mismatch"), health.StateUnhealthy, true, true},
		{"http", "5 three mismatches take a healthy backend out", []string{"up", "mismatch", "mismatch", "mismatch"}, health.StateUnhealthy, true, true},
		{"http", "7 a matching body recovers", []string{"up", "mismatch", "mismatch", "mismatch", "up", "up"}, health.StateHealthy, true, true},
		{"http", "11 verified by a body, then 404 takes it out", []string{"up", "404", "404", "404"}, health.StateUnhealthy, true, true},
	}
	th := health.Thresholds{Failures: 3, Successes: 2}
	for kind, newRig := range rigs {
		t.Run(kind, func(t *testing.T) {
			probe := newRig(t)
			for _, c := range cases {
				if c.kind != kind {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					var h health.Health
					if !h.InService() || h.State != health.StateUnknown {
						t.Fatalf("10: a backend not yet probed is %v, in service %v", h.State, h.InService())
					}
					for _, answer := range c.answers {
						h = h.Step(probe(t, answer), th)
					}
					if h.State != c.state || h.Reachable() != c.reachable || h.Verified != c.verified {
						t.Errorf("after %v: %v reachable=%v verified=%v, want %v reachable=%v verified=%v",
							c.answers, h.State, h.Reachable(), h.Verified, c.state, c.reachable, c.verified)
					}
				})
			}
		})
	}
}

// connCounter counts the gRPC connections a server has open and
// notifies changed at each change.
type connCounter struct {
	open    atomic.Int64
	changed signal
}

func (c *connCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (c *connCounter) HandleRPC(context.Context, stats.RPCStats)                       {}
func (c *connCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (c *connCounter) HandleConn(_ context.Context, s stats.ConnStats) {
	switch s.(type) {
	case *stats.ConnBegin:
		c.open.Add(1)
	case *stats.ConnEnd:
		c.open.Add(-1)
	}
	c.changed.notify()
}

// waitOpen waits up to 5s for the server to have want connections open.
func (c *connCounter) waitOpen(t *testing.T, want int64, why string) {
	t.Helper()
	await(t, fmt.Sprintf("%s: %d connections open", why, want), c.changed, func() bool { return c.open.Load() == want })
}

// TestProberClosesRetiredGRPCConnections: the Prober keeps one gRPC
// connection per backend across probes, replaces it when a reload changes
// the backend's client settings, and closes it when the backend is
// removed and when the Prober stops.
func TestProberClosesRetiredGRPCConnections(t *testing.T) {
	counter := &connCounter{changed: newSignal()}
	url := startGRPC(t, standardHealth(), nil, grpc.StatsHandler(counter))

	backend := config.Backend{Name: "g", URL: url, HealthProbe: config.NewHealthProbeOverride(config.HealthProbe{Kind: config.KindGRPC}, "kind")}
	configOf := func(backends ...config.Backend) *config.Config {
		cfg := newConfig(backends...)
		// Probes come often; their results count whatever they are.
		cfg.HealthProbe.Interval = model.Duration(50 * time.Millisecond)
		cfg.HealthProbe.Timeout = model.Duration(50 * time.Millisecond)
		return cfg
	}
	p := newPool(t, configOf(backend))
	var probes atomic.Int64
	probed := newSignal()
	prober := NewProber(p, log.NewNopLogger(), func(health.Result) {
		probes.Add(1)
		probed.notify()
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { prober.Run(ctx) })
	defer func() {
		cancel()
		wg.Wait()
		counter.waitOpen(t, 0, "after the Prober stopped")
	}()

	waitProbes := func(n int64) {
		t.Helper()
		await(t, fmt.Sprintf("%d probes", n), probed, func() bool { return probes.Load() >= n })
	}
	waitProbes(4)
	counter.waitOpen(t, 1, "after four probes")

	// A changed client configuration keeps the backend but rebuilds its
	// probe: the old connection is closed, a new one made.
	changed := backend
	changed.HTTPClientConfig = &config.HTTPClientConfig{EnableHTTP2: true}
	applyConfig(t, p, configOf(changed))
	prober.Sync()
	waitProbes(probes.Load() + 3)
	counter.waitOpen(t, 1, "after the client settings changed")

	applyConfig(t, p, configOf())
	prober.Sync()
	counter.waitOpen(t, 0, "after the backend was removed")
}
