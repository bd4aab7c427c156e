package collector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/common/version"

	"github.com/probegate/probegate/collector/internal/httpprobe"
)

// MaxProbeBodyBytes is how much of a probe response body is read. A backend
// answering with more is still classified by its status, but the rest of
// the body is never read: the connection is closed instead of drained, so a
// 1 GiB answer costs one connection, not a gigabyte of work.
const MaxProbeBodyBytes = 64 << 10

// Probe sends one health probe, GET url with the given timeout, and
// classifies its outcome (SPEC section 2). Only the client's transport is
// used: a redirect is classified as the ok it is and never followed, and
// the probe timeout replaces the client's. Probe never returns an error:
// every failure is a Result, a cancelled ctx included (a transport
// failure, which the Prober drops rather than records).
func Probe(ctx context.Context, client *http.Client, url string, timeout time.Duration) Result {
	req, err := NewProbeRequest(url)
	if err != nil {
		r := TransportResult(err.Error())
		r.Time = time.Now()
		return r
	}
	return ProbeRequest(ctx, client, req, timeout)
}

// NewProbeRequest builds the request a backend's probes send. It is built
// once per backend and reused by ProbeRequest, which never modifies it, so
// the URL is parsed once instead of once per probe.
func NewProbeRequest(url string) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("probe url %q: %w", url, err)
	}
	// Operators recognise probe traffic in their access logs by this, as
	// they do Prometheus scrapes; http_client_config headers override it.
	req.Header.Set("User-Agent", "probegate/"+version.Version)
	return req, nil
}

// ProbeRequest sends the probe request template req with the timeout and
// classifies the outcome. The template is only copied, never modified, so
// one template serves every probe of a backend (one at a time or not).
func ProbeRequest(ctx context.Context, client *http.Client, req *http.Request, timeout time.Duration) Result {
	start := time.Now()
	if ctx.Value(probeContextKey{}) == nil {
		ctx = withProbeMark(ctx)
	}
	// Cheaper than context.WithTimeout when the probe goes through
	// httpprobe, and a full context for any other transport.
	probeCtx, cancel := httpprobe.WithDeadline(ctx, start.Add(timeout))
	defer cancel()

	r := send(probeCtx, client, req.WithContext(probeCtx), timeout)
	r.Time = start
	r.Duration = time.Since(start)
	return r
}

// send runs the request and reads at most MaxProbeBodyBytes of its body.
// It uses the client's transport directly: a probe never follows a
// redirect whatever the client's CheckRedirect says, its timeout is the
// probe's, and it skips the header copies http.Client makes for redirects.
func send(ctx context.Context, client *http.Client, req *http.Request, timeout time.Duration) Result {
	transport := client.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	resp, err := transport.RoundTrip(req)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		return errorResult(ctx, "", err, timeout)
	}
	// A body that ends within the limit is read to its end, which lets the
	// transport keep the connection for the next probe. A longer one is
	// abandoned: closing an unfinished body closes the connection, which
	// bounds the work a hostile backend can cause to MaxProbeBodyBytes.
	err = httpprobe.Discard(resp.Body, MaxProbeBodyBytes)
	resp.Body.Close()
	if err != nil {
		return errorResult(ctx, fmt.Sprintf("reading the body after status %d: ", resp.StatusCode), err, timeout)
	}
	return StatusResult(resp.StatusCode)
}

// errorResult classifies a failed request or body read. The probe's own
// deadline is what makes a timeout, whatever error the transport chose to
// report it with; anything else is a transport failure.
func errorResult(ctx context.Context, prefix string, err error, timeout time.Duration) Result {
	// The *url.Error wrapper repeats the method and URL, which the
	// backend's log lines and /healthz already show.
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	var netErr interface{ Timeout() bool }
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return TimeoutResult(fmt.Sprintf("%sno answer within the probe timeout of %s", prefix, timeout))
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		// The connection's deadline, which is the probe's, can fire a
		// moment before the context's: the same timeout.
		return TimeoutResult(fmt.Sprintf("%sno answer within the probe timeout of %s: %v", prefix, timeout, err))
	}
	return TransportResult(prefix + err.Error())
}
