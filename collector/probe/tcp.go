package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/httpclient"
	"github.com/probegate/probegate/collector/pool"
)

// newTCP builds the tcp probe of a backend: connect to the host and port
// of its url (80 or 443 by scheme when it names none) and close the
// connection at once. An accepted connection is ok; there is no refusal,
// as a connection carries no evidence about the probe itself: refused,
// reset and unreachable are transport failures, no answer by the deadline
// a timeout.
func newTCP(b *pool.Backend) (Func, error) {
	addr, err := probeAddr(b.URL)
	if err != nil {
		return nil, err
	}
	timeout := time.Duration(b.Probe.Timeout)
	var dialer net.Dialer
	return func(ctx context.Context) health.Result {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			return errorResult(ctx, "", err, timeout)
		}
		conn.Close()
		return connectedResult()
	}, nil
}

// statusConnected is the Status of a tcp probe whose connection was
// accepted.
const statusConnected = "connected"

// connectedResult is the result of a tcp probe whose connection was
// accepted within the timeout. A tcp probe has no refusal: a refused
// connection is a transport failure.
func connectedResult() health.Result {
	return health.Result{Class: health.ClassOK, Status: statusConnected}
}

// tcpAnswers are the answers simulatedTCP takes.
const tcpAnswers = "ok, refused, reset, timeout or error"

// simulatedTCP is the result of a tcp probe answered as `probegate
// simulate` names it, in any case.
func simulatedTCP(answer string) (health.Result, bool) {
	switch answer = strings.ToLower(answer); answer {
	case "ok":
		return connectedResult(), true
	case "refused", "reset", "error":
		return health.TransportResult("simulated connection " + answer), true
	case "timeout":
		return health.TimeoutResult("simulated timeout"), true
	}
	return health.Result{}, false
}

// probeAddr is the host:port the tcp and grpc probes connect to: the
// backend url's, with the scheme's default port when it names none.
func probeAddr(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		return "", fmt.Errorf("probe url: %w", err)
	}
	if u.Host == "" {
		return "", fmt.Errorf("probe url: no host")
	}
	return httpclient.DialAddr(u), nil
}
