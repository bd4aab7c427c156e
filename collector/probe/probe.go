// Package probe probes every backend of a pool on its interval and feeds
// each result to the backend's state machine.
//
// A probe is one function type, Func, built once per backend by its kind.
// A kind is one entry of the kind table (kinds.go) and one file (http.go,
// tcp.go, grpc.go) with its builder, its results and how `probegate
// simulate` reads its answers. Everything a kind can prepare
// per backend (a parsed URL, a request template, a gRPC connection) it
// prepares when it builds the Func, so that each probe only sends and
// classifies. A kind that holds a resource (a gRPC connection, the HTTP
// probe's own connection) also returns the function that releases it,
// which the Prober calls once no probe uses it any more. The Prober owns
// the timing: it gives every probe a context whose deadline is the probe
// timeout (or, to a probe that keeps its own deadline on its connection,
// the deadline itself) and stamps the result's time and duration.
package probe

import (
	"context"
	"fmt"
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
)

// Func sends one probe and classifies its outcome. It returns by ctx's
// deadline, the probe timeout, whatever the backend does, and never
// returns an error: every failure is a Result. Time and Duration are the
// caller's to set.
type Func func(ctx context.Context) health.Result

// TimedFunc sends one probe that ends by deadline whatever the backend
// does, and reads ctx only for its cancellation: a probe that keeps its
// own deadline (on its connection) needs no context with a timer of its
// own, which would cost every probe a timer and a handful of allocations.
type TimedFunc func(ctx context.Context, deadline time.Time) health.Result

// built is a backend's probe as its kind builds it.
type built struct {
	probe Func
	// timed, when set, is the same probe keeping its own deadline, which
	// the Prober calls instead of probe.
	timed TimedFunc
	// release frees what the probe holds; nil when it holds nothing.
	release func()
}

// newFunc builds the probe of one backend for its kind.
func newFunc(b *pool.Backend) (built, error) {
	k, ok := kindNamed(b.Probe.EffectiveKind())
	if !ok {
		return built{}, fmt.Errorf("%q is not a probe kind", b.Probe.Kind)
	}
	return k.build(b)
}

// run sends one probe of the target with its timeout and stamps the
// result with the time it started and how long it took by now.
func (t *probeTarget) run(ctx context.Context, now func() time.Time) health.Result {
	start := now()
	var r health.Result
	switch {
	case t.buildErr != nil:
		r = health.TransportResult(t.buildErr.Error())
	case t.timed != nil:
		r = t.timed(ctx, start.Add(t.timeout))
	default:
		probeCtx, cancel := context.WithTimeout(ctx, t.timeout)
		r = t.probe(probeCtx)
		cancel()
	}
	r.Time = start
	r.Duration = now().Sub(start)
	return r
}
