package probe

import (
	"cmp"
	"context"
	"fmt"
	"io"
	stdlog "log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// The hostile-backend suite: scripted loopback backends that misbehave,
// each probed twice on one client (so that a kept-alive connection carries
// the second probe whenever the first left one). Each case states the
// class a probe must get and the test checks probegate's probe against
// it: a probe classifies what the backend said, within its timeout,
// whatever the backend does to the connection.

// hostileTimeout is the probe timeout of the suite: long, so that no
// answer a loaded machine delivers slowly is taken for a timeout.
const hostileTimeout = 2 * time.Second

// hostileShortTimeout is the probe timeout of the cases that must time
// out, which wait for it twice.
const hostileShortTimeout = 100 * time.Millisecond

// hostileMargin is how long after its timeout a probe may take to return
// before the suite calls it stuck. It is a bound, not a timing claim.
const hostileMargin = 2 * time.Second

// hostileCase is one misbehaving backend.
type hostileCase struct {
	name string
	// serve scripts a raw backend; start, when set instead, starts any
	// other server and returns its URL and how to stop it.
	serve func(c *hostileConn)
	start func(t *testing.T) (url string, stop func())
	// https probes the backend with https://.
	https bool
	// idle says the backend acts on the kept-alive connection once the
	// first probe returned (scripts wait for it with awaitIdle), and that
	// the client must close that connection: the second probe waits
	// until the backend saw it end.
	idle bool
	// timeout is the probe timeout, hostileTimeout when zero.
	timeout time.Duration
	// want is what both probes must be classified as.
	want health.Result
	// quick says both probes must end well within the timeout: the
	// outcome is bounded by the body limit, not by the body's size.
	quick bool
	// after checks the case once both probes returned.
	after func(t *testing.T)
}

var (
	okResult        = health.StatusResult(http.StatusOK)
	failedResult    = health.StatusResult(http.StatusServiceUnavailable)
	timeoutResult   = health.TimeoutResult("")
	transportResult = health.TransportResult("")
)

func redirectCase(status int) hostileCase {
	var target *countingServer
	return hostileCase{
		name: "redirect " + strconv.Itoa(status) + " elsewhere",
		start: func(t *testing.T) (string, func()) {
			target = startServer(t, func(http.ResponseWriter, *http.Request) {})
			srv := hostileServe(t, answerEach(head(fmt.Sprintf("HTTP/1.1 %d %s", status, http.StatusText(status)),
				"Location: "+target.URL+"/elsewhere", "Content-Length: 0")))
			return srv.URL, srv.Close
		},
		want: health.StatusResult(status),
		after: func(t *testing.T) {
			if n := target.requests.Load(); n != 0 {
				t.Errorf("the redirect target got %d requests: a redirect was followed", n)
			}
		},
	}
}

func hostileCases() []hostileCase {
	const empty200 = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	const empty503 = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
	hints := strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n", 300)
	continues := strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 300)
	cases := []hostileCase{
		// An answer nobody asked for, left on a kept-alive connection,
		// must never be taken for the answer to the next probe. net/http
		// puts a connection back in its idle pool before its read loop
		// looks for bytes nobody asked for; a request that takes the
		// connection within microseconds of the last answer can read the
		// unasked one as its own (both clients do, a few times in a
		// hundred). When probes are an interval apart the read loop finds
		// the bytes first and closes the connection; the second probe
		// waits for that close, seen by the backend, to be as certain.
		{name: "unasked 200 after each 503", idle: true, serve: answerEach(empty503 + empty200), want: failedResult},
		{name: "unasked 503 after each 200", idle: true, serve: answerEach(empty200 + empty503), want: okResult},
		{name: "unasked 200 while idle", idle: true, serve: func(c *hostileConn) {
			for c.readRequest() && c.write(empty503) {
				if !c.awaitIdle() || !c.write(empty200) {
					return
				}
			}
		}, want: failedResult},

		// Malformed heads.
		{name: "folded first header line", serve: answerEach(head("HTTP/1.1 200 OK", " X-Folded: a", "Content-Length: 0")), want: transportResult},
		{name: "folded content length", serve: answerEach("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n 0\r\n\r\n" + strings.Repeat("x", 10)), want: transportResult},
		{name: "header name with a parenthesis", serve: answerEach(head("HTTP/1.1 200 OK", "X-Bad(Name: a", "Content-Length: 0")), want: transportResult},
		{name: "control byte in a header value", serve: answerEach(head("HTTP/1.1 200 OK", "X-Bad: a\x01b", "Content-Length: 0")), want: transportResult},
		{name: "chunked twice", serve: answerEach(head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Transfer-Encoding: chunked") + "0\r\n\r\n"), want: transportResult},
		{name: "garbage status line", serve: answerEach(head("HELLO THERE", "Content-Length: 0")), want: transportResult},
		{name: "HTTP/1.2", serve: answerEach(head("HTTP/1.2 200 OK", "Content-Length: 0")), want: okResult},
		{name: "100 KB reason phrase", serve: answerEach(head("HTTP/1.1 503 "+strings.Repeat("x", 100<<10), "Content-Length: 0")), want: failedResult},
		{name: "1 MiB of headers", serve: answerEach(head("HTTP/1.1 503 Service Unavailable",
			strings.Repeat("X-Filler: "+strings.Repeat("a", 1000)+"\r\n", 1<<10)+"Content-Length: 0")), want: failedResult},
		{name: "19-digit content length", serve: answerOnce(func(c *hostileConn) bool {
			return c.write(head("HTTP/1.1 200 OK", "Content-Length: 9999999999999999999") + "ok")
		}), want: transportResult},
		{name: "18-digit content length, endless body", quick: true, serve: answerOnce(func(c *hostileConn) bool {
			if c.write(head("HTTP/1.1 200 OK", "Content-Length: 999999999999999999")) {
				c.repeat(strings.Repeat("x", 4096), 0)
			}
			return false
		}), want: okResult},
		{name: "204 then stray bytes", idle: true, serve: answerEach(head("HTTP/1.1 204 No Content") + "stray bytes\r\n"), want: health.StatusResult(http.StatusNoContent)},

		// Huge bodies: the status decides, and the probe ends with the
		// body limit, not with the body.
		{name: "10 MiB body", quick: true, serve: answerEach(head("HTTP/1.1 200 OK", "Content-Length: "+strconv.Itoa(10<<20)) + strings.Repeat("x", 10<<20)), want: okResult},
		{name: "chunked body without end", quick: true, serve: answerOnce(func(c *hostileConn) bool {
			if c.write(head("HTTP/1.1 503 Service Unavailable", "Transfer-Encoding: chunked")) {
				c.repeat("1000\r\n"+strings.Repeat("x", 0x1000)+"\r\n", 0)
			}
			return false
		}), want: failedResult},

		// Trickles slower than the timeout.
		{name: "trickled head", timeout: hostileShortTimeout, serve: answerOnce(func(c *hostileConn) bool {
			return c.trickle(empty200, hostileShortTimeout/10)
		}), want: timeoutResult},
		{name: "trickled body", timeout: hostileShortTimeout, serve: answerOnce(func(c *hostileConn) bool {
			return c.write(head("HTTP/1.1 200 OK", "Content-Length: 100")) && c.trickle(strings.Repeat("x", 100), hostileShortTimeout/10)
		}), want: timeoutResult},

		// Informational answers.
		{name: "300 100 Continue then 503", serve: answerEach(continues + empty503), want: failedResult},
		{name: "300 103 Early Hints then 200", serve: answerEach(hints + empty200), want: okResult},
		{name: "1xx forever", timeout: hostileShortTimeout, serve: answerOnce(func(c *hostileConn) bool {
			c.repeat("HTTP/1.1 103 Early Hints\r\n\r\n", time.Millisecond)
			return false
		}), want: timeoutResult},
		// net/http hands the connection itself over as the body of a 101,
		// and its Client.Timeout does not bound reading it: a plain client
		// hangs until the backend hangs up. probegate's probe closes the
		// body at its deadline.
		{name: "101 then silence", timeout: hostileShortTimeout, serve: answerOnce(func(c *hostileConn) bool {
			return c.write(head("HTTP/1.1 101 Switching Protocols", "Upgrade: whatever", "Connection: Upgrade"))
		}), want: timeoutResult},

		// Connections that end without an answer.
		{name: "reset after the request", serve: func(c *hostileConn) {
			if c.readRequest() {
				c.reset()
			}
		}, want: transportResult},
		{name: "closed without an answer", serve: func(*hostileConn) {}, want: transportResult},

		// TLS mismatches.
		{name: "https to a plain HTTP server", https: true, serve: answerEach(empty200), want: transportResult},
		{name: "http to a TLS server", start: func(t *testing.T) (string, func()) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			srv.Config.ErrorLog = stdlog.New(io.Discard, "", 0)
			srv.StartTLS()
			t.Cleanup(srv.Close)
			return strings.Replace(srv.URL, "https://", "http://", 1), srv.Close
		}, want: health.StatusResult(http.StatusBadRequest)},
		{name: "untrusted certificate", start: func(t *testing.T) (string, func()) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			srv.Config.ErrorLog = stdlog.New(io.Discard, "", 0)
			srv.StartTLS()
			t.Cleanup(srv.Close)
			return srv.URL, srv.Close
		}, want: transportResult},
	}
	for _, status := range []int{301, 302, 307, 308} {
		cases = append(cases, redirectCase(status))
	}
	return cases
}

// hostileRun probes twice with probe, calling between in between (it
// reports false to skip the second probe), and checks each probe returned
// within the timeout and the margin. It runs on a goroutine of its own.
func hostileRun(t *testing.T, timeout time.Duration, between func() bool, probe func() health.Result) (results []health.Result, took []time.Duration) {
	for i := range 2 {
		if i > 0 && !between() {
			return results, took
		}
		start := time.Now()
		results = append(results, probe())
		took = append(took, time.Since(start))
		if took[i] > timeout+hostileMargin {
			t.Errorf("probe %d took %v, more than its %v timeout and %v", i+1, took[i], timeout, hostileMargin)
		}
	}
	return results, took
}

func sameClass(a, b health.Result) bool {
	return a.Class == b.Class && a.Reason == b.Reason && a.StatusCode == b.StatusCode
}

func TestHostileBackendsClassified(t *testing.T) {
	t.Parallel()
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			timeout := cmp.Or(tc.timeout, hostileTimeout)
			var url string
			var stop func()
			between := func() bool { return true }
			if tc.start != nil {
				url, stop = tc.start(t)
			} else {
				srv := hostileServe(t, tc.serve)
				url, stop = srv.URL, srv.Close
				if tc.idle {
					between = func() bool {
						srv.Idle()
						if !holdsWithin(hostileMargin, srv.ended, func() bool { return srv.Ended.Load() > 0 }) {
							t.Errorf("the client kept the connection with an unasked answer on it for %v", hostileMargin)
							return false
						}
						return true
					}
				}
			}
			if tc.https {
				url = strings.Replace(url, "http://", "https://", 1)
			}
			url += "/healthz"

			client := newClient(t)
			var results []health.Result
			var took []time.Duration
			done := make(chan struct{})
			go func() {
				defer close(done)
				results, took = hostileRun(t, timeout, between, func() health.Result {
					return probeOnce(context.Background(), client, url, timeout)
				})
			}()
			stuck := time.NewTimer(3*hostileMargin + 2*timeout)
			defer stuck.Stop()
			select {
			case <-done:
			case <-stuck.C:
				t.Errorf("the probes are stuck; stopping the backend")
				stop()
				<-done
			}

			for i, got := range results {
				if !sameClass(got, tc.want) {
					t.Errorf("probe %d: got %s/%s status %d (%s), want %s/%s status %d", i+1,
						got.Class, got.Reason, got.StatusCode, got.Err, tc.want.Class, tc.want.Reason, tc.want.StatusCode)
				}
				if tc.quick && took[i] > timeout/2 {
					t.Errorf("probe %d took %v, want well within the %v timeout: the body limit ends it", i+1, took[i], timeout)
				}
			}
			if tc.after != nil {
				tc.after(t)
			}
		})
	}
}
