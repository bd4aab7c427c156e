package probe

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/httpclient"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testconfig"
)

// newConfig is the shared test configuration with the given backends.
func newConfig(backends ...config.Backend) *config.Config {
	return testconfig.New(backends...)
}

// newPool is a pool of the configuration's backends. Every client's idle
// connections are closed when the test ends.
func newPool(t testing.TB, cfg *config.Config) *pool.Pool {
	t.Helper()
	p := pool.New(nil, nil)
	applyConfig(t, p, cfg)
	return p
}

// applyConfig makes the pool the configuration's backends.
func applyConfig(t testing.TB, p *pool.Pool, cfg *config.Config) {
	t.Helper()
	if err := p.Apply(discovery.Static(cfg), pool.SettingsOf(cfg)); err != nil {
		t.Fatal(err)
	}
	for _, b := range p.Backends() {
		t.Cleanup(b.Client.CloseIdleConnections)
	}
}

// newClient is probegate's client for the default http_client_config.
func newClient(t testing.TB) *http.Client {
	t.Helper()
	client, err := httpclient.NewCache().Client(config.HTTPClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.CloseIdleConnections)
	return client
}

// probeOnce probes url once through client as the Prober does: the
// backend's HTTP probe built by newFunc (which owns its connection with
// the default http_client_config), run with the timeout, the result
// stamped with its time and duration. The probe's connection is closed
// after it.
func probeOnce(ctx context.Context, client *http.Client, url string, timeout time.Duration) health.Result {
	b := &pool.Backend{URL: url, Client: client, Probe: config.HealthProbe{Enabled: true, Timeout: model.Duration(timeout)}}
	target := newProbeTarget(b, newFunc)
	if target.release != nil {
		defer target.release()
	}
	return target.run(ctx, time.Now)
}

// probePath is one of the two ways an HTTP probe reaches its backend.
type probePath struct {
	name string
	// transport says the probe goes through net/http's Transport (the
	// client) rather than owning its connection.
	transport bool
}

// probePaths are both paths, the owned connection first.
func probePaths() []probePath {
	return []probePath{{name: "own connection"}, {name: "net/http", transport: true}}
}

// httpTarget is the HTTP probe of url with the timeout on path, through
// client when the path is net/http's. It keeps its connection from probe
// to probe, as the Prober's targets do, until the test ends.
func httpTarget(t testing.TB, client *http.Client, url string, timeout time.Duration, path probePath) *probeTarget {
	t.Helper()
	b := &pool.Backend{URL: url, Client: client, Probe: config.HealthProbe{Enabled: true, Timeout: model.Duration(timeout)}}
	return releasedTarget(t, newProbeTarget(b, buildOn(path)))
}

// buildOn builds a backend's HTTP probe on path, whatever its
// http_client_config would choose.
func buildOn(path probePath) func(*pool.Backend) (built, error) {
	return func(b *pool.Backend) (built, error) {
		spec, err := newHTTPProbe(b)
		if err != nil {
			return built{}, err
		}
		spec.transport = ""
		if path.transport {
			spec.transport = "chosen by the test"
		}
		return spec.build()
	}
}

// releasedTarget releases what target holds when the test ends.
func releasedTarget(t testing.TB, target *probeTarget) *probeTarget {
	if target.release != nil {
		t.Cleanup(target.release)
	}
	return target
}

// signal wakes a test waiting for a change. A send never blocks: one
// pending wake-up is enough, since the waiter checks its condition anew.
type signal chan struct{}

func newSignal() signal { return make(signal, 1) }

func (s signal) notify() {
	select {
	case s <- struct{}{}:
	default:
	}
}

// await waits until cond holds, checking it again whenever changed is
// notified, and fails the test when it does not hold by the test binary's
// deadline (less a margin to report it). A fixed wait would fail a correct
// test on a machine loaded enough; a wrong one still fails, and says what
// it waited for.
func await(t *testing.T, what string, changed signal, cond func() bool) {
	t.Helper()
	wait := awaitBound(t)
	if !holdsWithin(wait, changed, cond) {
		t.Fatalf("%s: not within %v", what, wait)
	}
}

// awaitBound is how long await waits: until the test binary's deadline
// less a minute, or a minute when it has none.
func awaitBound(t *testing.T) time.Duration {
	const margin = time.Minute
	deadline, ok := t.Deadline()
	if !ok {
		return margin
	}
	return max(time.Until(deadline)-margin, time.Second)
}

// holdsWithin reports whether cond holds within d, checking it again
// whenever changed is notified. Unlike await it may run on any goroutine.
func holdsWithin(d time.Duration, changed signal, cond func() bool) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
	return true
}

// withTimeout is set followed by a probe timeout of d: for a probe that
// must time out, and waits as long as its timeout.
func withTimeout(set func(*config.HealthProbe), d time.Duration) func(*config.HealthProbe) {
	return func(p *config.HealthProbe) {
		set(p)
		p.Timeout = model.Duration(d)
	}
}
