package probe

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptrace"
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// Inspection is what one probe sent to a backend and saw of its answer.
type Inspection struct {
	Result health.Result
	// Request is the request template an HTTP probe sent; nil for other
	// kinds and when the probe could not be built.
	Request *http.Request
	// Response is the head of an HTTP answer, nil without one. Its body
	// is read and closed: Body is what the probe read of it, at most the
	// 64 KiB any probe reads.
	Response *http.Response
	Body     []byte
}

// Inspect sends one probe of b now, within its probe timeout, built as the
// Prober builds it: the backend's own kind, client and classification. An
// HTTP probe runs with trace's hooks (when not nil) and keeps the answer's
// head and what it read of the body. Every probe inspected dials a
// connection of its own, as blackbox_exporter's debug probes do, so that
// its connect and TLS phases always show: an HTTP probe that owns its
// connection is built for this one call, one through net/http's Transport
// asks for a connection closed after the answer, and a probe of another
// kind is built for this one call and released after it (a gRPC probe
// dials a connection of its own). Nothing is recorded: the caller gets the
// result.
func Inspect(ctx context.Context, b *pool.Backend, trace *httptrace.ClientTrace) Inspection {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(b.Probe.Timeout))
	defer cancel()
	if b.Probe.EffectiveKind() != config.KindHTTP {
		made, err := newFunc(b)
		if err != nil {
			return Inspection{Result: health.TransportResult(err.Error())}
		}
		if made.release != nil {
			defer made.release()
		}
		return Inspection{Result: made.probe(ctx)}
	}
	spec, err := newHTTPProbe(b)
	if err != nil {
		return Inspection{Result: health.TransportResult(err.Error())}
	}
	if trace != nil {
		ctx = httptrace.WithClientTrace(ctx, trace)
	}
	var seen seenAnswer
	var r health.Result
	if spec.transport == "" {
		p, err := newConnProbe(spec)
		if err != nil {
			return Inspection{Result: health.TransportResult(err.Error())}
		}
		r = p.probe(ctx, &seen)
		p.closeConn()
	} else {
		own := spec.req.Clone(context.Background())
		own.Close = true
		r = httpProbe(ctx, spec.client, own, spec.timeout, spec.body, &seen)
	}
	return Inspection{Result: r, Request: spec.req, Response: seen.head, Body: seen.body}
}

// seenAnswer is what an inspected probe keeps of the answer: its head and
// as much of its body as the probe read.
type seenAnswer struct {
	head *http.Response
	body []byte
}

func (s *seenAnswer) keepBody(content []byte) {
	s.body = bytes.Clone(content)
}
