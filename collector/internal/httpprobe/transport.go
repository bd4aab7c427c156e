// Package httpprobe is an HTTP/1.1 transport made for health probes at
// scale: one small request at a time per backend over one kept-alive
// connection, run entirely on the calling goroutine.
//
// net/http's Transport keeps two goroutines and 8 KiB of buffers for every
// open connection and hands each request between three goroutines. For a
// prober holding a connection to each of thousands of backends that is
// most of its memory and CPU. This transport keeps only the connection
// while idle; buffers are pooled and lent out for the length of one
// exchange, and deadlines on the connection replace the goroutines that
// watch for timeouts and cancellation.
package httpprobe

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// DefaultMaxResponseHeaderBytes bounds the status line and headers of a
// response. Health answers have a handful of short headers; a backend that
// sends more is broken or hostile.
const DefaultMaxResponseHeaderBytes = 64 << 10

// DefaultIdleConnTimeout is how long an idle connection is trusted. One
// idle for longer is closed and a new one dialed.
const DefaultIdleConnTimeout = 5 * time.Minute

// readBufferSize is the size of the pooled read buffers. A typical health
// answer fits whole; longer ones are read in several calls.
const readBufferSize = 2 << 10

// longAgo is a deadline in the past, which makes blocked reads and writes
// on a connection return at once.
var longAgo = time.Unix(1, 0)

// Transport is an http.RoundTripper for GET requests without a body, as
// health probes are. It keeps at most one idle connection: a probe ending
// while another connection is idle closes its own.
//
// A request's context bounds it: its deadline becomes the connection's
// deadline, and cancelling it interrupts the exchange. A response body must
// be closed; closing it before its end closes the connection instead of
// reading the rest, so an endless body costs nothing more than what was read.
type Transport struct {
	// DialContext opens connections; nil means a plain net.Dialer.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLSClientConfig is used for https URLs; nil means the default.
	TLSClientConfig *tls.Config
	// MaxResponseHeaderBytes bounds a response's status line and headers;
	// 0 means DefaultMaxResponseHeaderBytes.
	MaxResponseHeaderBytes int64
	// IdleConnTimeout bounds how long a connection is kept idle; 0 means
	// DefaultIdleConnTimeout.
	IdleConnTimeout time.Duration

	mu   sync.Mutex
	idle *conn
	// wire is the last request as written, sent again as long as requests
	// stay the same, which a prober's do.
	wire *wireRequest
}

// wireRequest is a request serialised, with a copy of everything its bytes
// depend on so a changed request is never sent stale.
type wireRequest struct {
	method, host string
	close        bool
	url          url.URL
	header       http.Header
	bytes        []byte
}

func (w *wireRequest) matches(req *http.Request) bool {
	if w == nil || req.Method != w.method || req.Host != w.host || req.Close != w.close ||
		*req.URL != w.url || len(req.Header) != len(w.header) {
		return false
	}
	for name, values := range req.Header {
		if cached, ok := w.header[name]; !ok || !slices.Equal(values, cached) {
			return false
		}
	}
	return true
}

// serialise returns the request's bytes on the wire.
func (t *Transport) serialise(req *http.Request) ([]byte, error) {
	t.mu.Lock()
	w := t.wire
	t.mu.Unlock()
	if w.matches(req) {
		return w.bytes, nil
	}
	var buf bytes.Buffer
	if err := req.Write(&buf); err != nil {
		return nil, err
	}
	w = &wireRequest{method: req.Method, host: req.Host, close: req.Close, url: *req.URL, header: req.Header.Clone(), bytes: buf.Bytes()}
	t.mu.Lock()
	t.wire = w
	t.mu.Unlock()
	return w.bytes, nil
}

// conn is one connection and what the transport knows about it.
type conn struct {
	net.Conn
	// scheme and host are the URL's it was dialed for, so a transport
	// whose requests change host never reuses it for another.
	scheme, host string
	idleSince    time.Time
	// reader counts and bounds what is read from the connection.
	reader countingReader
}

// countingReader reads from a connection, counting the bytes and stopping
// with errHeadersTooLarge once limit is reached.
type countingReader struct {
	conn  net.Conn
	read  int64
	limit int64
}

var errHeadersTooLarge = errors.New("response headers too large")

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.limit {
		return 0, errHeadersTooLarge
	}
	if left := r.limit - r.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := r.conn.Read(p)
	r.read += int64(n)
	return n, err
}

var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBufferSize) }}

// RoundTrip sends the request and reads the response's status and headers.
// A request on a reused connection that fails before any byte of the
// response arrived, or is answered 408, is retried once on a new
// connection: servers close idle connections whenever they like, and that
// says nothing about their health.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req.Body.Close()
		return nil, errors.New("httpprobe: requests with a body are not supported")
	}
	if u := req.URL; u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("httpprobe: unsupported URL scheme %q", u.Scheme)
	}
	ctx := req.Context()
	if c := t.takeIdle(req.URL); c != nil {
		resp, err := t.exchange(ctx, c, req)
		switch {
		case err == nil && resp.StatusCode == http.StatusRequestTimeout:
			// Some servers write a 408 on an idle keep-alive connection
			// before they close it. On a reused connection it is that
			// notice, not the answer to this request (net/http assumes the
			// same), and taking it for the answer would make a healthy
			// backend look refused.
			resp.Body.(*body).keepAlive = false
			resp.Body.Close()
		case err == nil || c.reader.read > 0 || ctx.Err() != nil:
			return resp, err
		}
	}
	c, err := t.dial(ctx, req.URL)
	if err != nil {
		return nil, err
	}
	return t.exchange(ctx, c, req)
}

// CloseIdleConnections closes the idle connection, if any.
func (t *Transport) CloseIdleConnections() {
	if c := t.swapIdle(nil); c != nil {
		c.Close()
	}
}

// swapIdle makes c the idle connection and returns the one before.
func (t *Transport) swapIdle(c *conn) *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.idle
	t.idle = c
	return old
}

// dialAddress is the host and port to dial for an http or https URL.
func dialAddress(u *url.URL) (string, error) {
	port := u.Port()
	switch {
	case u.Hostname() == "":
		return "", errors.New("httpprobe: URL has no host")
	case port == "" && u.Scheme == "https":
		port = "443"
	case port == "":
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

func (t *Transport) takeIdle(u *url.URL) *conn {
	c := t.swapIdle(nil)
	if c == nil {
		return nil
	}
	timeout := t.IdleConnTimeout
	if timeout <= 0 {
		timeout = DefaultIdleConnTimeout
	}
	if c.scheme != u.Scheme || c.host != u.Host || time.Since(c.idleSince) > timeout {
		c.Close()
		return nil
	}
	return c
}

func (t *Transport) putIdle(c *conn) {
	c.idleSince = time.Now()
	if old := t.swapIdle(c); old != nil {
		old.Close()
	}
}

func (t *Transport) dial(ctx context.Context, u *url.URL) (*conn, error) {
	addr, err := dialAddress(u)
	if err != nil {
		return nil, err
	}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "https" {
		cfg := t.TLSClientConfig.Clone()
		if cfg == nil {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		// This transport speaks HTTP/1.1 only.
		cfg.NextProtos = nil
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	return &conn{Conn: nc, scheme: u.Scheme, host: u.Host}, nil
}

// exchange writes the request on c and reads the response head. On error
// the connection is closed.
func (t *Transport) exchange(ctx context.Context, c *conn, req *http.Request) (*http.Response, error) {
	deadline, _ := ctx.Deadline()
	if err := c.SetDeadline(deadline); err != nil {
		c.Close()
		return nil, err
	}
	// Cancellation interrupts blocked reads and writes through the
	// deadline; no goroutine waits for it. The deadline itself is already
	// the connection's, so only the cancellation of what the deadline
	// context was derived from needs watching.
	stop := context.AfterFunc(watchedContext(ctx), func() { c.SetDeadline(longAgo) })

	limit := t.MaxResponseHeaderBytes
	if limit <= 0 {
		limit = DefaultMaxResponseHeaderBytes
	}
	c.reader = countingReader{conn: c.Conn, limit: limit}
	br := readers.Get().(*bufio.Reader)
	br.Reset(&c.reader)

	head, err := t.roundTrip(c, br, req)
	if err != nil {
		stop()
		c.Close()
		br.Reset(nil)
		readers.Put(br)
		return nil, contextError(ctx, err)
	}
	// The body is not bounded by the header limit.
	c.reader.limit = 1<<63 - 1
	// Each response gets a body of its own, so that a second Close of an
	// old response can never reach the connection's next one.
	b := &body{t: t, c: c, br: br, stop: stop, ctx: ctx, keepAlive: !head.close, remaining: head.contentLength}
	switch {
	case head.chunked:
		b.framing = framedByChunks
		b.chunks = newChunkedReader(br)
	case head.contentLength < 0:
		b.framing = framedByClose
	}
	resp := &http.Response{
		Status:        head.statusText,
		StatusCode:    head.status,
		Proto:         head.proto,
		ProtoMajor:    head.major,
		ProtoMinor:    head.minor,
		Body:          b,
		ContentLength: head.contentLength,
		Close:         head.close,
		Request:       req,
	}
	if head.chunked {
		resp.TransferEncoding = []string{"chunked"}
	}
	return resp, nil
}

// roundTrip writes the request and reads the head of the final response.
func (t *Transport) roundTrip(c *conn, br *bufio.Reader, req *http.Request) (responseHead, error) {
	wire, err := t.serialise(req)
	if err != nil {
		return responseHead{}, err
	}
	if _, err := c.Write(wire); err != nil {
		return responseHead{}, err
	}
	for {
		head, err := readResponseHead(br)
		if err != nil {
			if errors.Is(err, errHeadersTooLarge) {
				return head, fmt.Errorf("server response headers exceeded %d bytes", c.reader.limit)
			}
			return head, err
		}
		// Informational answers (100 Continue, 103 Early Hints) precede
		// the real one; their heads have no body.
		if head.status >= 100 && head.status < 200 && head.status != http.StatusSwitchingProtocols {
			continue
		}
		return head, nil
	}
}

// contextError reports a failure caused by the request's context as the
// context's error, as net/http does, so callers can tell a timeout or a
// cancellation from a network failure. The connection's deadline is the
// context's and may fire a moment before the context notices.
func contextError(ctx context.Context, err error) error {
	ctxErr := ctx.Err()
	var netErr net.Error
	if deadline, ok := ctx.Deadline(); ctxErr == nil && ok && errors.As(err, &netErr) && netErr.Timeout() && !time.Now().Before(deadline) {
		ctxErr = context.DeadlineExceeded
	}
	if ctxErr != nil {
		return fmt.Errorf("%w (%v)", ctxErr, err)
	}
	return err
}
