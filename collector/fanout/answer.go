package fanout

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/probegate/probegate/collector/fanout/internal/membudget"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/traffic"
)

// backendAnswer is what one backend's part of a round came to.
type backendAnswer struct {
	backend     *pool.Backend
	outcome     traffic.Outcome
	contributed bool
	status      int
	// header and body are kept for a contribution, and for a 4xx answer
	// read whole (relayable), which the round relays when nobody
	// contributed.
	header    http.Header
	body      []byte
	relayable bool
	// latency is how long the backend took, from sending the request to
	// the end of the body read.
	latency time.Duration
}

// askOne sends the request to one backend and judges its answer.
func (f *Fanout) askOne(ctx context.Context, client *http.Request, b *pool.Backend, target string, header http.Header, body []byte, s *settings, mem *membudget.Round) backendAnswer {
	var reqBody io.Reader
	if client.Method == http.MethodPost {
		reqBody = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, client.Method, b.URL+target, reqBody)
	if err != nil {
		return errorAnswer(client, b, err)
	}
	// The header is shared by every backend's request: round trippers
	// never modify a request, they clone it first.
	req.Header = header
	// The client's transport directly: a fan-out never follows redirects,
	// and http.Client.Do copies every request's header in case it does.
	transport := b.Client.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	resp, err := transport.RoundTrip(req)
	if err != nil {
		return errorAnswer(client, b, err)
	}
	defer resp.Body.Close()

	a := backendAnswer{backend: b, status: resp.StatusCode}
	class, _ := health.ClassifyStatus(resp.StatusCode)
	a.outcome.Failed = class == health.ClassFailed
	limit := int64(s.fanout.MaxResponseBytes)
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		if client.Method == http.MethodHead {
			a.contributed = true
			return a
		}
		data, err := readDecoded(resp, limit, mem)
		if err != nil {
			return bodyErrorAnswer(client, a, err)
		}
		if err := s.merger.Validate(data); err != nil {
			a.outcome.Erred, a.outcome.Reason = true, traffic.InvalidBody
			return a
		}
		a.contributed, a.body = true, data
	case code >= 400 && code <= 499 && code != http.StatusTooManyRequests:
		a.outcome.Erred, a.outcome.Reason = true, traffic.HTTP4xx
		// Relayed as is, so read as sent: a compressed refusal stays
		// compressed, with its Content-Encoding.
		if data, err := mem.Read(resp.Body, resp.ContentLength, limit); err == nil {
			a.header, a.body, a.relayable = resp.Header, data, true
		}
	default:
		a.outcome.Erred, a.outcome.Reason = true, statusReason(code)
		_, _ = io.CopyN(io.Discard, resp.Body, errorBodyDrainBytes)
	}
	return a
}

// statusReason is why an answer that is neither 2xx nor a relayable 4xx
// did not contribute.
func statusReason(code int) traffic.Reason {
	switch class, reason := health.ClassifyStatus(code); {
	case reason == health.ReasonHTTP429:
		return traffic.HTTP429
	case reason == health.ReasonHTTP5xx || class == health.ClassRefused:
		// 501 is a refusal of the probe path to a probe, but
		// here it is a backend that cannot serve the query: a 5xx.
		return traffic.HTTP5xx
	case class == health.ClassOK:
		return traffic.HTTP3xx
	default:
		return traffic.Transport
	}
}

// errorAnswer is the answer of a backend whose request failed before any
// HTTP status arrived.
func errorAnswer(client *http.Request, b *pool.Backend, err error) backendAnswer {
	return backendAnswer{backend: b, outcome: errorOutcome(client, err)}
}

// bodyErrorAnswer turns an answer whose body could not be read into a
// non-contribution: too large or not gzip as announced (the backend did
// answer 2xx, which passive health counts as a success), or whatever
// errorOutcome makes of the rest: past the buffer budget or out of
// descriptors (local), a timeout or a transport error mid-body.
func bodyErrorAnswer(client *http.Request, a backendAnswer, err error) backendAnswer {
	switch {
	case errors.Is(err, membudget.ErrTooLarge):
		a.outcome.Erred, a.outcome.Reason = true, traffic.TooLarge
		return a
	case errors.Is(err, errGzipBody):
		a.outcome.Erred, a.outcome.Reason = true, traffic.InvalidBody
		return a
	}
	a.outcome = errorOutcome(client, err)
	return a
}

// errorOutcome judges a request that failed without a usable answer. A
// client that went away, or probegate's own lack of descriptors or memory
// (health.LocalCause, the one rule probes follow too), says nothing about
// the backend: such an outcome is local, and passive health never sees
// it. Anything else is the backend's failure.
func errorOutcome(client *http.Request, err error) traffic.Outcome {
	if _, local := health.LocalCause(err); local || client.Context().Err() != nil {
		return traffic.Outcome{Erred: true, Reason: traffic.Local}
	}
	return traffic.Outcome{Erred: true, Reason: errorReason(err), Failed: true}
}

// errorReason tells a timeout from any other transport error.
func errorReason(err error) traffic.Reason {
	var netErr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
		return traffic.Timeout
	}
	return traffic.Transport
}
