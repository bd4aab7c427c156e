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
	"io"
	"net"
	"net/http"
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
}

// conn is one connection and what the transport knows about it.
type conn struct {
	net.Conn
	// addr is the scheme and address it was dialed for, so a transport
	// whose requests change host never reuses it for another.
	addr      string
	idleSince time.Time
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

var writeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// RoundTrip sends the request and reads the response's status and headers.
// A request on a reused connection that fails before any byte of the
// response arrived is retried once on a new connection: servers close idle
// connections whenever they like, and that says nothing about their health.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req.Body.Close()
		return nil, errors.New("httpprobe: requests with a body are not supported")
	}
	addr, err := dialAddress(req)
	if err != nil {
		return nil, err
	}
	ctx := req.Context()
	if c := t.takeIdle(addr); c != nil {
		resp, err := t.exchange(ctx, c, req)
		if err == nil || c.reader.read > 0 || ctx.Err() != nil {
			return resp, err
		}
	}
	c, err := t.dial(ctx, req, addr)
	if err != nil {
		return nil, err
	}
	return t.exchange(ctx, c, req)
}

// CloseIdleConnections closes the idle connection, if any.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	c := t.idle
	t.idle = nil
	t.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

func dialAddress(req *http.Request) (string, error) {
	u := req.URL
	port := u.Port()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("httpprobe: unsupported URL scheme %q", u.Scheme)
	case u.Hostname() == "":
		return "", errors.New("httpprobe: URL has no host")
	case port == "" && u.Scheme == "https":
		port = "443"
	case port == "":
		port = "80"
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port), nil
}

func (t *Transport) takeIdle(addr string) *conn {
	t.mu.Lock()
	c := t.idle
	t.idle = nil
	t.mu.Unlock()
	if c == nil {
		return nil
	}
	timeout := t.IdleConnTimeout
	if timeout <= 0 {
		timeout = DefaultIdleConnTimeout
	}
	if c.addr != addr || time.Since(c.idleSince) > timeout {
		c.Close()
		return nil
	}
	return c
}

func (t *Transport) putIdle(c *conn) {
	c.idleSince = time.Now()
	t.mu.Lock()
	old := t.idle
	t.idle = c
	t.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

func (t *Transport) dial(ctx context.Context, req *http.Request, addr string) (*conn, error) {
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	hostPort := addr[len(req.URL.Scheme)+len("://"):]
	nc, err := dial(ctx, "tcp", hostPort)
	if err != nil {
		return nil, err
	}
	if req.URL.Scheme == "https" {
		cfg := t.TLSClientConfig.Clone()
		if cfg == nil {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			cfg.ServerName = req.URL.Hostname()
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
	return &conn{Conn: nc, addr: addr}, nil
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
	// deadline; no goroutine waits for it.
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(longAgo) })

	limit := t.MaxResponseHeaderBytes
	if limit <= 0 {
		limit = DefaultMaxResponseHeaderBytes
	}
	c.reader = countingReader{conn: c.Conn, limit: limit}
	br := readers.Get().(*bufio.Reader)
	br.Reset(&c.reader)

	resp, err := roundTrip(c, br, req)
	if err != nil {
		stop()
		c.Close()
		br.Reset(nil)
		readers.Put(br)
		return nil, contextError(ctx, err)
	}
	// The body is not bounded by the header limit.
	c.reader.limit = 1<<63 - 1
	resp.Body = &body{t: t, c: c, br: br, src: resp.Body, stop: stop, ctx: ctx, keepAlive: !resp.Close}
	return resp, nil
}

func roundTrip(c *conn, br *bufio.Reader, req *http.Request) (*http.Response, error) {
	buf := writeBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	err := req.Write(buf)
	if err == nil {
		_, err = c.Write(buf.Bytes())
	}
	writeBuffers.Put(buf)
	if err != nil {
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			if errors.Is(err, errHeadersTooLarge) {
				return nil, fmt.Errorf("server response headers exceeded %d bytes", c.reader.limit)
			}
			return nil, err
		}
		// Informational answers (100 Continue, 103 Early Hints) precede
		// the real one.
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		return resp, nil
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

// body is a response body on a transport connection. Reading it to its end
// and closing it returns the connection to the transport; closing it early
// closes the connection.
type body struct {
	t         *Transport
	c         *conn
	br        *bufio.Reader
	src       io.ReadCloser
	stop      func() bool
	ctx       context.Context
	keepAlive bool
	sawEOF    bool
	failed    bool
	closed    bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errors.New("httpprobe: read on closed body")
	}
	n, err := b.src.Read(p)
	switch {
	case err == io.EOF:
		b.sawEOF = true
	case err != nil:
		b.failed = true
		err = contextError(b.ctx, err)
	}
	return n, err
}

func (b *body) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	// stop reports false once cancellation already poisoned the deadline.
	notCancelled := b.stop()
	reusable := b.keepAlive && b.sawEOF && !b.failed && notCancelled && b.br.Buffered() == 0
	if reusable && b.c.SetDeadline(time.Time{}) == nil {
		b.t.putIdle(b.c)
	} else {
		// Closing an unfinished body would drain it; the connection is
		// closed instead and the rest never read.
		b.c.Close()
	}
	b.br.Reset(nil)
	readers.Put(b.br)
	b.br = nil
	return nil
}
