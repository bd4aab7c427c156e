// Package probe probes every backend of a pool on its interval and feeds
// each result to the backend's state machine.
//
// A probe kind is one function type, Func, built once per backend by the
// kind's file: http.go, tcp.go and grpc.go. Everything a kind can prepare
// per backend (a parsed URL, a request template, a gRPC connection) it
// prepares when it builds the Func, so that each probe only sends and
// classifies. A kind that holds a resource also returns the function that
// releases it, which the Prober calls once no probe uses it any more. The Prober owns the
// timing: it gives every probe a context whose deadline is the probe
// timeout and stamps the result's time and duration.
package probe

import (
	"context"
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// Func sends one probe and classifies its outcome. It returns by ctx's
// deadline, the probe timeout, whatever the backend does, and never
// returns an error: every failure is a Result. Time and Duration are the
// caller's to set.
type Func func(ctx context.Context) health.Result

// newFunc builds the probe of one backend for its kind, and the function
// that releases what the probe holds (nil when it holds nothing).
func newFunc(b *pool.Backend) (Func, func(), error) {
	switch b.Probe.EffectiveKind() {
	case config.KindTCP:
		f, err := newTCP(b)
		return f, nil, err
	case config.KindGRPC:
		return newGRPC(b)
	}
	f, err := newHTTP(b)
	return f, nil, err
}

// run sends one probe of the target with its timeout and stamps the
// result with the time it started and how long it took by now.
func (t *probeTarget) run(ctx context.Context, now func() time.Time) health.Result {
	start := now()
	var r health.Result
	if t.buildErr != nil {
		r = health.TransportResult(t.buildErr.Error())
	} else {
		probeCtx, cancel := context.WithTimeout(ctx, t.timeout)
		r = t.probe(probeCtx)
		cancel()
	}
	r.Time = start
	r.Duration = now().Sub(start)
	return r
}
