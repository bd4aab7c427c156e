package probe

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	stdlog "log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/testpki"
)

// The hostile-backend suite: scripted loopback backends that misbehave,
// each probed twice by one probe target (so that a kept-alive connection
// carries the second probe whenever the first left one), once on each of
// the probe's two paths: the connection it owns, and net/http's Transport.
// Each case states the class a probe must get; both paths must get it,
// and they must agree with each other on every probe's class, reason and
// status and on how many connections the two probes took. A case where
// they disagree is a bug in the owned-connection probe: net/http's
// Transport is the reference it keeps to.

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
	// other server and returns its URL and how to stop it (the suite
	// then cannot count its connections).
	serve func(c *hostileConn)
	start func(t *testing.T) (url string, stop func())
	// tls serves the script over TLS with the test PKI's server
	// certificate, changed by serverTLS when set; client is the probe's
	// http_client_config, by default one that trusts the test CA.
	tls       bool
	serverTLS func(*tls.Config)
	client    func(pki *testpki.PKI) config.HTTPClientConfig
	// https probes a plaintext backend with https://.
	https bool
	// method is the probe's method, GET when empty; closeEach sends
	// every probe on a connection of its own (keep_alive false).
	method    string
	closeEach bool
	// idle says the backend acts on the kept-alive connection once the
	// first probe returned (scripts wait for it with awaitIdle, and say
	// what they sent with sendUnasked): the second probe waits until the
	// backend saw the connection end or, for a probe that looks at its
	// connection only when it next uses it, until the unasked answer was
	// sent.
	idle bool
	// timeout is the probe timeout, hostileTimeout when zero.
	timeout time.Duration
	// want is what both probes must be classified as; second, when set,
	// is what the second probe must be classified as instead.
	want   health.Result
	second *health.Result
	// conns, when not zero, is how many connections the two probes must
	// take: 1 when the first is reused.
	conns int64
	// quick says both probes must end well within the timeout: the
	// outcome is bounded by the limit on the body or the head, not by
	// what the backend sends.
	quick bool
}

var (
	okResult        = health.StatusResult(http.StatusOK)
	failedResult    = health.StatusResult(http.StatusServiceUnavailable)
	timeoutResult   = health.TimeoutResult("")
	transportResult = health.TransportResult("")
)

// Answers the cases send, whole.
const (
	empty200 = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	empty503 = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"
)

// redirectCase answers every probe with a redirect to a port nothing
// listens on: a probe that followed it would fail to connect.
func redirectCase(status int, location string, extra ...string) hostileCase {
	headers := append([]string{"Location: " + location, "Content-Length: 0"}, extra...)
	return hostileCase{
		name:  fmt.Sprintf("redirect %d to %s", status, location),
		serve: answerEach(head(fmt.Sprintf("HTTP/1.1 %d %s", status, http.StatusText(status)), headers...)),
		want:  health.StatusResult(status), conns: 1,
	}
}

// statusCase answers every probe with the status line given and an empty
// body.
func statusCase(name, statusLine string, want health.Result, conns int64) hostileCase {
	return hostileCase{name: name, serve: answerEach(head(statusLine, "Content-Length: 0")), want: want, conns: conns}
}

// bodyCase answers every probe with 200, the headers given and the raw
// body after them.
func bodyCase(name string, want health.Result, conns int64, body string, headers ...string) hostileCase {
	return hostileCase{name: name, serve: answerEach(head("HTTP/1.1 200 OK", headers...) + body), want: want, conns: conns}
}

// onceThenClose answers one request on each connection with answer and
// closes it.
func onceThenClose(answer string) func(*hostileConn) {
	return func(c *hostileConn) {
		if c.readRequest() {
			c.write(answer)
		}
	}
}

// secondRequest answers the first request on each connection with
// empty200 and then does second when the next request comes.
func secondRequest(second func(*hostileConn)) func(*hostileConn) {
	return func(c *hostileConn) {
		if c.readRequest() && c.write(empty200) && c.readRequest() {
			second(c)
		}
	}
}

// gzipped is s compressed with gzip.
func gzipped(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	io.WriteString(w, s)
	w.Close()
	return b.String()
}

func hostileCases() []hostileCase {
	hints := strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n", 300)
	continues := strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 300)
	// 72 KiB of 1xx heads: more than the 64 KiB limit on a head, which
	// the 1xx heads before it count toward.
	hugeHints := strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: "+strings.Repeat("a", 8<<10)+"\r\n\r\n", 9)
	gzipBody := gzipped("ok")
	cases := []hostileCase{
		// An answer nobody asked for, left on a kept-alive connection,
		// must never be taken for the answer to the next probe. net/http
		// puts a connection back in its idle pool before its read loop
		// looks for bytes nobody asked for; a request that takes the
		// connection within microseconds of the last answer can read the
		// unasked one as its own. When probes are an interval apart the
		// read loop finds the bytes first and closes the connection; the
		// second probe waits for that close, seen by the backend, to be
		// as certain. The owned connection finds them in its buffer or
		// by its peek before reuse.
		{name: "unasked 200 after each 503", idle: true, serve: answerEach(empty503 + empty200), want: failedResult, conns: 2},
		{name: "unasked 503 after each 200", idle: true, serve: answerEach(empty200 + empty503), want: okResult, conns: 2},
		{name: "unasked 200 while idle", idle: true, serve: func(c *hostileConn) {
			for c.readRequest() && c.write(empty503) {
				if !c.sendUnasked(empty200) {
					return
				}
			}
		}, want: failedResult, conns: 2},
		{name: "unasked garbage while idle", idle: true, serve: func(c *hostileConn) {
			for c.readRequest() && c.write(empty200) && c.sendUnasked("garbage") {
			}
		}, want: okResult, conns: 2},
		{name: "unasked 408 while idle", idle: true, serve: func(c *hostileConn) {
			if c.readRequest() && c.write(empty200) && c.sendUnasked("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n") {
				c.silence()
			}
		}, want: okResult, conns: 2},
		{name: "unasked bytes beyond the content length", idle: true, serve: answerEach(head("HTTP/1.1 200 OK", "Content-Length: 2") + "okEXTRA"), want: okResult, conns: 2},
		{name: "HEAD answered with a body", idle: true, method: http.MethodHead, serve: answerEach(head("HTTP/1.1 200 OK", "Content-Length: 2") + "ok"), want: okResult, conns: 2},
		{name: "204 then stray bytes", idle: true, serve: answerEach(head("HTTP/1.1 204 No Content") + "stray bytes\r\n"), want: health.StatusResult(http.StatusNoContent), conns: 2},

		// Idle connections that end.
		{name: "closed while idle", idle: true, serve: func(c *hostileConn) {
			if c.readRequest() && c.write(empty200) {
				c.awaitIdle()
			}
		}, want: okResult, conns: 2},
		{name: "reset while idle", idle: true, serve: func(c *hostileConn) {
			if c.readRequest() && c.write(empty200) && c.awaitIdle() {
				c.reset()
			}
		}, want: okResult, conns: 2},
		{name: "closed after each answer", serve: onceThenClose(empty200), want: okResult, conns: 2},
		{name: "closed after each answer that said so", serve: onceThenClose(head("HTTP/1.1 200 OK", "Connection: close", "Content-Length: 0")), want: okResult, conns: 2},
		// A reused connection that fails before any byte of the answer is
		// retried once on a new one; one that fails after a byte is not.
		{name: "reused connection closed on the next request", serve: secondRequest(func(*hostileConn) {}), want: okResult, conns: 2},
		{name: "reused connection reset on the next request", serve: secondRequest(func(c *hostileConn) { c.reset() }), want: okResult, conns: 2},
		{name: "reused connection cut mid status line", serve: func(c *hostileConn) {
			if c.n == 1 {
				secondRequest(func(c *hostileConn) { c.write("HTTP/1.1 2") })(c)
				return
			}
			answerEach(empty200)(c)
		}, want: okResult, second: &transportResult, conns: 1},
		{name: "reused connection silent on the next request", timeout: hostileShortTimeout, serve: secondRequest(func(c *hostileConn) { c.silence() }),
			want: okResult, second: &timeoutResult, conns: 1},

		// Status lines.
		statusCase("garbage status line", "HELLO THERE", transportResult, 2),
		statusCase("HTTP/1.2", "HTTP/1.2 200 OK", okResult, 1),
		statusCase("HTTP/1.0 without keep-alive", "HTTP/1.0 200 OK", okResult, 2),
		{name: "HTTP/1.0 with keep-alive", serve: answerEach(head("HTTP/1.0 200 OK", "Connection: keep-alive", "Content-Length: 0")), want: okResult, conns: 1},
		statusCase("HTTP/2.0 on an HTTP/1 connection", "HTTP/2.0 200 OK", okResult, 1),
		statusCase("HTTP/10.0", "HTTP/10.0 200 OK", transportResult, 2),
		statusCase("lower-case protocol", "http/1.1 200 OK", transportResult, 2),
		statusCase("ICY", "ICY 200 OK", transportResult, 2),
		statusCase("no reason phrase", "HTTP/1.1 200", okResult, 1),
		statusCase("empty reason phrase", "HTTP/1.1 503 ", failedResult, 1),
		statusCase("four-digit status", "HTTP/1.1 2000 OK", transportResult, 2),
		statusCase("two-digit status", "HTTP/1.1 20 OK", transportResult, 2),
		statusCase("negative status", "HTTP/1.1 -20 OK", transportResult, 2),
		statusCase("letters for a status", "HTTP/1.1 abc OK", transportResult, 2),
		statusCase("two spaces before the status", "HTTP/1.1  200 OK", okResult, 1),
		statusCase("status 600", "HTTP/1.1 600 Whatever", health.StatusResult(600), 1),
		statusCase("status 999", "HTTP/1.1 999 Whatever", health.StatusResult(999), 1),
		statusCase("status 000", "HTTP/1.1 000 Whatever", health.StatusResult(0), 2),
		statusCase("429", "HTTP/1.1 429 Too Many Requests", health.StatusResult(429), 1),
		statusCase("404", "HTTP/1.1 404 Not Found", health.StatusResult(404), 1),
		statusCase("501", "HTTP/1.1 501 Not Implemented", health.StatusResult(501), 1),
		statusCase("599", "HTTP/1.1 599 Whatever", health.StatusResult(599), 1),
		statusCase("399", "HTTP/1.1 399 Whatever", health.StatusResult(399), 1),
		{name: "bare LF line ends", serve: answerEach("HTTP/1.1 200 OK\nContent-Length: 0\n\n"), want: okResult, conns: 1},
		{name: "NUL in the status line", serve: answerEach("HTTP/1.1 200 O\x00K\r\nContent-Length: 0\r\n\r\n"), want: okResult, conns: 1},
		{name: "blank line for a status line", serve: answerEach("\r\nContent-Length: 0\r\n\r\n"), want: transportResult, conns: 2},
		{name: "status line, then the connection ends", serve: onceThenClose("HTTP/1.1 200 OK\r\n"), want: transportResult, conns: 2},
		{name: "60 KiB reason phrase", serve: answerEach(head("HTTP/1.1 503 "+strings.Repeat("x", 60<<10), "Content-Length: 0")), want: failedResult, conns: 1},
		{name: "100 KiB reason phrase", serve: answerEach(head("HTTP/1.1 503 "+strings.Repeat("x", 100<<10), "Content-Length: 0")), want: transportResult, conns: 2},

		// Header blocks.
		{name: "folded first header line", serve: answerEach(head("HTTP/1.1 200 OK", " X-Folded: a", "Content-Length: 0")), want: transportResult},
		{name: "folded content length", serve: answerEach("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n 0\r\n\r\n" + strings.Repeat("x", 10)), want: transportResult},
		{name: "header name with a parenthesis", serve: answerEach(head("HTTP/1.1 200 OK", "X-Bad(Name: a", "Content-Length: 0")), want: transportResult},
		{name: "header line without a colon", serve: answerEach(head("HTTP/1.1 200 OK", "X-No-Colon", "Content-Length: 0")), want: transportResult},
		{name: "space before a header colon", serve: answerEach(head("HTTP/1.1 200 OK", "X-Space : a", "Content-Length: 0")), want: okResult, conns: 1},
		{name: "control byte in a header value", serve: answerEach(head("HTTP/1.1 200 OK", "X-Bad: a\x01b", "Content-Length: 0")), want: transportResult},
		{name: "60 KB of headers", serve: answerEach(head("HTTP/1.1 503 Service Unavailable",
			strings.Repeat("X-Filler: "+strings.Repeat("a", 1000)+"\r\n", 60)+"Content-Length: 0")), want: failedResult, conns: 1},
		{name: "1 MiB of headers", serve: answerOnce(func(c *hostileConn) bool {
			return c.write(head("HTTP/1.1 503 Service Unavailable", strings.Repeat("X-Filler: "+strings.Repeat("a", 1000)+"\r\n", 1<<10)+"Content-Length: 0"))
		}), want: transportResult, conns: 2},
		{name: "11 MiB of headers", serve: answerOnce(func(c *hostileConn) bool {
			return c.write(head("HTTP/1.1 200 OK", strings.Repeat("X-Filler: "+strings.Repeat("a", 8<<10)+"\r\n", 11<<7)+"Content-Length: 0"))
		}), want: transportResult, conns: 2},
		{name: "head that ends with the connection", serve: onceThenClose("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"), want: transportResult, conns: 2},
		{name: "Connection: close in mixed case", serve: onceThenClose(head("HTTP/1.1 200 OK", "Connection: Close", "Content-Length: 0")), want: okResult, conns: 2},
		{name: "Connection: keep-alive, close", serve: onceThenClose(head("HTTP/1.1 200 OK", "Connection: keep-alive, close", "Content-Length: 0")), want: okResult, conns: 2},
		{name: "Keep-Alive header", serve: answerEach(head("HTTP/1.1 200 OK", "Keep-Alive: timeout=5, max=100", "Content-Length: 0")), want: okResult, conns: 1},

		// Body framing.
		bodyCase("content length", okResult, 1, "ok", "Content-Length: 2"),
		bodyCase("two equal content lengths", okResult, 1, "ok", "Content-Length: 2", "Content-Length: 2"),
		bodyCase("two different content lengths", transportResult, 2, "ok", "Content-Length: 2", "Content-Length: 3"),
		bodyCase("content length 2, 2", transportResult, 2, "ok", "Content-Length: 2, 2"),
		bodyCase("content length +2", transportResult, 2, "ok", "Content-Length: +2"),
		bodyCase("content length 0x2", transportResult, 2, "ok", "Content-Length: 0x2"),
		bodyCase("content length with spaces around it", okResult, 1, "ok", "Content-Length:   2  "),
		bodyCase("negative content length", transportResult, 2, "", "Content-Length: -5"),
		{name: "19-digit content length", serve: answerOnce(func(c *hostileConn) bool {
			return c.write(head("HTTP/1.1 200 OK", "Content-Length: 9999999999999999999") + "ok")
		}), want: transportResult},
		{name: "18-digit content length, endless body", quick: true, serve: answerOnce(func(c *hostileConn) bool {
			if c.write(head("HTTP/1.1 200 OK", "Content-Length: 999999999999999999")) {
				c.repeat(strings.Repeat("x", 4096), 0)
			}
			return false
		}), want: okResult, conns: 2},
		{name: "body cut short", serve: onceThenClose(head("HTTP/1.1 200 OK", "Content-Length: 100") + "short"), want: transportResult, conns: 2},
		{name: "body that ends with the connection", serve: onceThenClose(head("HTTP/1.1 200 OK") + "ok"), want: okResult, conns: 2},
		{name: "HTTP/1.0 body that ends with the connection", serve: onceThenClose(head("HTTP/1.0 200 OK") + "ok"), want: okResult, conns: 2},
		bodyCase("body of exactly the limit", okResult, 1, strings.Repeat("x", maxBodyBytes), "Content-Length: "+strconv.Itoa(maxBodyBytes)),
		bodyCase("body one byte over the limit", okResult, 2, strings.Repeat("x", maxBodyBytes+1), "Content-Length: "+strconv.Itoa(maxBodyBytes+1)),
		// A body the probe stops reading leaves its connection unfit:
		// the rest of it would come before the next answer.
		{name: "body over the limit, its rest never sent", serve: func(c *hostileConn) {
			if c.readRequest() && c.write(head("HTTP/1.1 200 OK", "Content-Length: "+strconv.Itoa(2*maxBodyBytes))+strings.Repeat("x", maxBodyBytes)) {
				c.silence()
			}
		}, want: okResult, conns: 2},
		{name: "10 MiB body", quick: true, serve: answerEach(head("HTTP/1.1 200 OK", "Content-Length: "+strconv.Itoa(10<<20)) + strings.Repeat("x", 10<<20)), want: okResult, conns: 2},
		bodyCase("chunked", okResult, 1, "2\r\nok\r\n0\r\n\r\n", "Transfer-Encoding: chunked"),
		bodyCase("chunked in capitals", okResult, 1, "2\r\nok\r\n0\r\n\r\n", "Transfer-Encoding: CHUNKED"),
		bodyCase("chunked with trailers", okResult, 1, "2\r\nok\r\n0\r\nX-Trailer: a\r\n\r\n", "Transfer-Encoding: chunked", "Trailer: X-Trailer"),
		bodyCase("chunked with an extension", okResult, 1, "2;name=value\r\nok\r\n0\r\n\r\n", "Transfer-Encoding: chunked"),
		bodyCase("chunked with a content length", okResult, 1, "2\r\nok\r\n0\r\n\r\n", "Transfer-Encoding: chunked", "Content-Length: 100"),
		bodyCase("chunk size not hex", transportResult, 2, "zz\r\nok\r\n0\r\n\r\n", "Transfer-Encoding: chunked"),
		bodyCase("chunk without its CRLF", transportResult, 2, "2\r\nokXX0\r\n\r\n", "Transfer-Encoding: chunked"),
		bodyCase("chunk size overflowing", transportResult, 2, "fffffffffffffffff\r\nok\r\n0\r\n\r\n", "Transfer-Encoding: chunked"),
		{name: "chunked twice", serve: answerEach(head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", "Transfer-Encoding: chunked") + "0\r\n\r\n"), want: transportResult},
		bodyCase("gzip, chunked", transportResult, 2, "2\r\nok\r\n0\r\n\r\n", "Transfer-Encoding: gzip, chunked"),
		bodyCase("identity transfer coding", transportResult, 2, "ok", "Transfer-Encoding: identity", "Content-Length: 2"),
		{name: "chunked body cut short", serve: onceThenClose(head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked") + "10\r\nshort"), want: transportResult, conns: 2},
		{name: "chunked body without its last chunk", serve: onceThenClose(head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked") + "2\r\nok\r\n"), want: transportResult, conns: 2},
		{name: "chunked body without end", quick: true, serve: answerOnce(func(c *hostileConn) bool {
			if c.write(head("HTTP/1.1 503 Service Unavailable", "Transfer-Encoding: chunked")) {
				c.repeat("1000\r\n"+strings.Repeat("x", 0x1000)+"\r\n", 0)
			}
			return false
		}), want: failedResult, conns: 2},
		{name: "204 with a content length", serve: answerEach(head("HTTP/1.1 204 No Content", "Content-Length: 10")), want: health.StatusResult(http.StatusNoContent), conns: 1},
		{name: "304 with a content length", serve: answerEach(head("HTTP/1.1 304 Not Modified", "Content-Length: 10")), want: health.StatusResult(http.StatusNotModified), conns: 1},
		{name: "HEAD with a content length", method: http.MethodHead, serve: answerEach(head("HTTP/1.1 200 OK", "Content-Length: 10")), want: okResult, conns: 1},
		{name: "HEAD, chunked", method: http.MethodHead, serve: answerEach(head("HTTP/1.1 200 OK", "Transfer-Encoding: chunked")), want: okResult, conns: 1},
		bodyCase("gzip body", okResult, 1, gzipBody, "Content-Encoding: gzip", "Content-Length: "+strconv.Itoa(len(gzipBody))),
		bodyCase("gzip body that is not gzip", okResult, 1, "ok", "Content-Encoding: gzip", "Content-Length: 2"),
		bodyCase("gzip body, chunked", okResult, 1, fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(gzipBody), gzipBody), "Content-Encoding: gzip", "Transfer-Encoding: chunked"),

		// Trickles, slower than the timeout or within it.
		{name: "trickled head", timeout: hostileShortTimeout, serve: answerOnce(func(c *hostileConn) bool {
			return c.trickle(empty200, hostileShortTimeout/10)
		}), want: timeoutResult, conns: 2},
		{name: "trickled body", timeout: hostileShortTimeout, serve: answerOnce(func(c *hostileConn) bool {
			return c.write(head("HTTP/1.1 200 OK", "Content-Length: 100")) && c.trickle(strings.Repeat("x", 100), hostileShortTimeout/10)
		}), want: timeoutResult, conns: 2},
		{name: "head trickled within the timeout", serve: func(c *hostileConn) {
			for c.readRequest() && c.trickle(empty200, time.Millisecond) {
			}
		}, want: okResult, conns: 1},
		{name: "status line cut at the deadline", timeout: hostileShortTimeout, serve: answerOnce(func(c *hostileConn) bool {
			return c.write("HTTP/1.1 20")
		}), want: timeoutResult, conns: 2},
		{name: "head without its end", timeout: hostileShortTimeout, serve: answerOnce(func(c *hostileConn) bool {
			return c.write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n")
		}), want: timeoutResult, conns: 2},
		{name: "no answer", timeout: hostileShortTimeout, serve: answerOnce(func(*hostileConn) bool { return true }), want: timeoutResult, conns: 2},
		{name: "request never read", timeout: hostileShortTimeout, serve: func(c *hostileConn) { <-c.srv.closing }, want: timeoutResult, conns: 2},

		// Informational answers.
		{name: "300 100 Continue then 503", serve: answerEach(continues + empty503), want: failedResult, conns: 1},
		{name: "300 103 Early Hints then 200", serve: answerEach(hints + empty200), want: okResult, conns: 1},
		{name: "102 then 200", serve: answerEach("HTTP/1.1 102 Processing\r\n\r\n" + empty200), want: okResult, conns: 1},
		{name: "199 then 404", serve: answerEach("HTTP/1.1 199 Whatever\r\nX-A: b\r\n\r\n" + head("HTTP/1.1 404 Not Found", "Content-Length: 0")), want: health.StatusResult(404), conns: 1},
		{name: "1xx then garbage", serve: answerEach("HTTP/1.1 100 Continue\r\n\r\nGARBAGE\r\n\r\n"), want: transportResult, conns: 2},
		{name: "1xx then the connection ends", serve: onceThenClose("HTTP/1.1 100 Continue\r\n\r\n"), want: transportResult, conns: 2},
		{name: "72 KiB of 1xx heads", quick: true, serve: answerOnce(func(c *hostileConn) bool { return c.write(hugeHints + empty200) }), want: transportResult, conns: 2},
		{name: "1xx forever", timeout: hostileShortTimeout, serve: answerOnce(func(c *hostileConn) bool {
			c.repeat("HTTP/1.1 103 Early Hints\r\n\r\n", time.Millisecond)
			return false
		}), want: timeoutResult, conns: 2},
		// net/http hands the connection itself over as the body of a 101,
		// and its Client.Timeout does not bound reading it: a plain client
		// hangs until the backend hangs up. probegate's probe ends at its
		// deadline, and never reuses the connection.
		{name: "101 then silence", timeout: hostileShortTimeout, serve: answerOnce(func(c *hostileConn) bool {
			return c.write(head("HTTP/1.1 101 Switching Protocols", "Upgrade: whatever", "Connection: Upgrade"))
		}), want: timeoutResult, conns: 2},
		{name: "101 then the connection ends", serve: onceThenClose(head("HTTP/1.1 101 Switching Protocols", "Upgrade: whatever", "Connection: Upgrade") + "hello"),
			want: health.StatusResult(http.StatusSwitchingProtocols), conns: 2},
		{name: "100 then 101 then the connection ends", serve: onceThenClose("HTTP/1.1 100 Continue\r\n\r\n" + head("HTTP/1.1 101 Switching Protocols", "Upgrade: whatever", "Connection: Upgrade")),
			want: health.StatusResult(http.StatusSwitchingProtocols), conns: 2},

		// Connections that end without an answer.
		{name: "reset after the request", serve: func(c *hostileConn) {
			if c.readRequest() {
				c.reset()
			}
		}, want: transportResult, conns: 2},
		{name: "closed without an answer", serve: func(*hostileConn) {}, want: transportResult, conns: 2},
		{name: "closed after the request", serve: func(c *hostileConn) { c.readRequest() }, want: transportResult, conns: 2},
		{name: "random bytes", serve: onceThenClose(string(bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 1024))), want: transportResult, conns: 2},

		// Connections without keep-alive (keep_alive false).
		{name: "keep_alive false", closeEach: true, serve: answerEach(empty200), want: okResult, conns: 2},
		{name: "keep_alive false, answered with keep-alive", closeEach: true, serve: answerEach(head("HTTP/1.1 200 OK", "Connection: keep-alive", "Content-Length: 0")), want: okResult, conns: 2},

		// TLS.
		{name: "TLS", tls: true, serve: answerEach(empty200), want: okResult, conns: 1},
		{name: "TLS, keep_alive false", tls: true, closeEach: true, serve: answerEach(empty200), want: okResult, conns: 2},
		{name: "TLS closed after each answer", tls: true, serve: onceThenClose(empty200), want: okResult, conns: 2},
		{name: "TLS, unasked 200 while idle", tls: true, idle: true, serve: func(c *hostileConn) {
			for c.readRequest() && c.write(empty503) {
				if !c.sendUnasked(empty200) {
					return
				}
			}
		}, want: failedResult, conns: 2},
		{name: "TLS 1.2 only", tls: true, serverTLS: func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }, serve: answerEach(empty200), want: okResult, conns: 1},
		{name: "TLS below the client's min_version", tls: true, serverTLS: func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 },
			client: func(pki *testpki.PKI) config.HTTPClientConfig {
				cc := trustTestCA(pki)
				cc.TLSConfig.MinVersion = commoncfg.TLSVersion(tls.VersionTLS13)
				return cc
			}, serve: answerEach(empty200), want: transportResult, conns: 2},
		{name: "TLS with the wrong server_name", tls: true, client: func(pki *testpki.PKI) config.HTTPClientConfig {
			cc := trustTestCA(pki)
			cc.TLSConfig.ServerName = "elsewhere.invalid"
			return cc
		}, serve: answerEach(empty200), want: transportResult, conns: 2},
		{name: "TLS with its server_name", tls: true, client: func(pki *testpki.PKI) config.HTTPClientConfig {
			cc := trustTestCA(pki)
			cc.TLSConfig.ServerName = testpki.ServerName
			return cc
		}, serve: answerEach(empty200), want: okResult, conns: 1},
		{name: "untrusted certificate", tls: true, client: func(*testpki.PKI) config.HTTPClientConfig { return config.HTTPClientConfig{} },
			serve: answerEach(empty200), want: transportResult, conns: 2},
		{name: "untrusted certificate, insecure_skip_verify", tls: true, client: func(*testpki.PKI) config.HTTPClientConfig {
			return config.HTTPClientConfig{TLSConfig: commoncfg.TLSConfig{InsecureSkipVerify: true}}
		}, serve: answerEach(empty200), want: okResult, conns: 1},
		{name: "TLS asking for a client certificate", tls: true, serverTLS: func(c *tls.Config) { c.ClientAuth = tls.RequireAnyClientCert },
			serve: answerEach(empty200), want: transportResult, conns: 2},
		{name: "TLS with a client certificate", tls: true, serverTLS: func(c *tls.Config) { c.ClientAuth = tls.RequireAnyClientCert },
			client: func(pki *testpki.PKI) config.HTTPClientConfig {
				cc := trustTestCA(pki)
				cc.TLSConfig.Cert, cc.TLSConfig.Key = pki.ClientPEM, commoncfg.Secret(pki.ClientKeyPEM)
				return cc
			}, serve: answerEach(empty200), want: okResult, conns: 1},
		{name: "https to a plain HTTP server", https: true, serve: answerEach(empty200), want: transportResult, conns: 2},
		{name: "http to a TLS server", start: func(t *testing.T) (string, func()) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			srv.Config.ErrorLog = stdlog.New(io.Discard, "", 0)
			srv.StartTLS()
			t.Cleanup(srv.Close)
			return strings.Replace(srv.URL, "https://", "http://", 1), srv.Close
		}, want: health.StatusResult(http.StatusBadRequest)},

		// Redirects are classified, never followed.
		redirectCase(http.StatusSeeOther, "/elsewhere"),
		{name: "300 without a location", serve: answerEach(head("HTTP/1.1 300 Multiple Choices", "Content-Length: 0")), want: health.StatusResult(300), conns: 1},
		{name: "redirect with a body", serve: answerEach(head("HTTP/1.1 302 Found", "Location: http://127.0.0.1:1/", "Content-Length: 4") + "away"), want: health.StatusResult(302), conns: 1},
		{name: "redirect to itself", serve: answerEach(head("HTTP/1.1 302 Found", "Location: /healthz", "Content-Length: 0")), want: health.StatusResult(302), conns: 1},
	}
	for _, status := range []int{301, 302, 307, 308} {
		cases = append(cases, redirectCase(status, "http://127.0.0.1:1/elsewhere"))
	}
	cases = append(cases, redirectCase(http.StatusFound, "https://127.0.0.1:1/elsewhere"))
	return append(cases, headBoundCases()...)
}

// trustTestCA is the http_client_config that trusts the test PKI's CA,
// given inline.
func trustTestCA(pki *testpki.PKI) config.HTTPClientConfig {
	return config.HTTPClientConfig{TLSConfig: commoncfg.TLSConfig{CA: pki.CAPEM}}
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

// hostileOutcome is what one path made of a case: the two probes'
// results and the connections they took (-1 when not counted).
type hostileOutcome struct {
	results []health.Result
	conns   int64
}

// runHostileCase starts the case's backend and probes it twice on path.
func runHostileCase(t *testing.T, tc hostileCase, path probePath, pki *testpki.PKI) hostileOutcome {
	timeout := cmp.Or(tc.timeout, hostileTimeout)
	var url string
	var stop func()
	var srv *hostileServer
	between := func() bool { return true }
	if tc.start != nil {
		url, stop = tc.start(t)
	} else {
		var serverTLS *tls.Config
		if tc.tls {
			serverTLS = &tls.Config{Certificates: []tls.Certificate{pki.Server}}
			if tc.serverTLS != nil {
				tc.serverTLS(serverTLS)
			}
		}
		srv = hostileServeTLS(t, serverTLS, tc.serve)
		url, stop = srv.URL, srv.Close
		if tc.idle {
			between = func() bool {
				srv.Idle()
				// net/http closes the connection as soon as its read loop
				// sees what the backend did; the owned connection looks at
				// it when the next probe would use it.
				done := func() bool { return srv.Ended.Load() > 0 || (!path.transport && srv.Unasked.Load() > 0) }
				if !holdsWithin(hostileMargin, srv.ended, done) {
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
	var cc config.HTTPClientConfig
	switch {
	case tc.client != nil:
		cc = tc.client(pki)
	case tc.tls:
		cc = trustTestCA(pki)
	}
	cfg := newConfig(config.Backend{Name: "b", URL: url, HTTPClientConfig: &cc})
	cfg.HealthProbe.Timeout = model.Duration(timeout)
	cfg.HealthProbe.Method = cmp.Or(tc.method, http.MethodGet)
	cfg.HealthProbe.KeepAlive = new(!tc.closeEach)
	target := releasedTarget(t, newProbeTarget(newPool(t, cfg).Backends()[0], buildOn(path)))
	if target.buildErr != nil {
		t.Fatalf("building the probe: %v", target.buildErr)
	}

	var results []health.Result
	var took []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		results, took = hostileRun(t, timeout, between, func() health.Result { return target.run(context.Background(), time.Now) })
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
		want := tc.want
		if i == 1 && tc.second != nil {
			want = *tc.second
		}
		if !sameClass(got, want) {
			t.Errorf("probe %d: got %s/%s status %d (%s), want %s/%s status %d", i+1,
				got.Class, got.Reason, got.StatusCode, got.Err, want.Class, want.Reason, want.StatusCode)
		}
		if tc.quick && took[i] > timeout/2 {
			t.Errorf("probe %d took %v, want well within the %v timeout: a limit ends it", i+1, took[i], timeout)
		}
	}
	out := hostileOutcome{results: results, conns: -1}
	if srv != nil {
		out.conns = srv.Conns.Load()
		if tc.conns != 0 && out.conns != tc.conns {
			t.Errorf("the two probes took %d connections, want %d", out.conns, tc.conns)
		}
	}
	return out
}

// TestHostileSuiteSize: the suite covers at least the 96 cases the
// owned-connection probe was first judged on.
func TestHostileSuiteSize(t *testing.T) {
	n := len(hostileCases())
	if n < 96 {
		t.Errorf("the hostile suite has %d cases, want at least 96", n)
	}
	t.Logf("%d cases, each on both paths", n)
}

func TestHostileBackendsClassified(t *testing.T) {
	t.Parallel()
	pki := testpki.New(t)
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			outcomes := make([]hostileOutcome, 0, 2)
			for _, path := range probePaths() {
				t.Run(path.name, func(t *testing.T) {
					outcomes = append(outcomes, runHostileCase(t, tc, path, pki))
				})
			}
			if len(outcomes) != 2 {
				return
			}
			owned, transport := outcomes[0], outcomes[1]
			for i := range min(len(owned.results), len(transport.results)) {
				if a, b := owned.results[i], transport.results[i]; !sameClass(a, b) {
					t.Errorf("probe %d: the own connection got %s/%s status %d (%s), net/http %s/%s status %d (%s)", i+1,
						a.Class, a.Reason, a.StatusCode, a.Err, b.Class, b.Reason, b.StatusCode, b.Err)
				}
			}
			if owned.conns != transport.conns {
				t.Errorf("the own connection's two probes took %d connections, net/http's %d", owned.conns, transport.conns)
			}
		})
	}
}
