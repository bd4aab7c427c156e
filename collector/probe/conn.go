package probe

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"regexp"
	"sync"
	"syscall"
	"time"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/httpclient"
)

// probeReadBufferSize is the size of the buffer a probe borrows to read
// its answer: net/http's default. A head longer than it is still read
// whole.
const probeReadBufferSize = 4 << 10

// borrowedReaders is shared by every connection probe, which borrows a
// reader for as long as it reads, so that an idle connection holds no
// buffer: with thousands of backends the buffers in use are as many as
// the probes in flight. Like net/http's own pools of bufio readers, it
// holds nothing a caller could observe: a borrowed reader is reset to a
// new connection before use.
var borrowedReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, probeReadBufferSize) }}

// errHeaderLimit is the error of a read past
// httpclient.MaxResponseHeaderBytes of head, in the words of the
// Transport's reader; the probe reports it as the Transport does.
var errHeaderLimit = fmt.Errorf("read limit of %d bytes exhausted", httpclient.MaxResponseHeaderBytes)

// askedGET and askedHEAD are the requests http.ReadResponse reads the
// answers of GET and HEAD probes by, shared by every probe: it reads
// only their method, and nothing writes them. A probe of another method
// has its own (askedBy).
var (
	askedGET  = &http.Request{Method: http.MethodGet}
	askedHEAD = &http.Request{Method: http.MethodHead}
)

// askedBy is the request http.ReadResponse reads the answers to a probe
// of method by.
func askedBy(method string) *http.Request {
	switch method {
	case http.MethodGet:
		return askedGET
	case http.MethodHead:
		return askedHEAD
	}
	return &http.Request{Method: method}
}

// aLongTimeAgo is a deadline that has passed: setting it makes every
// read and write on a connection return at once.
var aLongTimeAgo = time.Unix(1, 0)

// connProbe is the HTTP probe of one backend that owns its connection:
// one HTTP/1.1 connection kept between probes, on which the worker that
// runs the probe writes the request as (*http.Request).Write wrote it and
// reads the answer with http.ReadResponse: the standard library's own
// writer and parser. It
// keeps the rules net/http's Transport keeps about when a connection may
// carry the next request (see reusable and quiet). Probes of one
// backend never overlap (the schedule sees to it), so nothing but the
// interruption at cancellation touches the connection concurrently.
type connProbe struct {
	// request is the probe's request as (*http.Request).Write writes it,
	// written once when the probe is built: the template never changes,
	// so neither do its bytes, and each probe sends them in one write
	// instead of formatting them anew; its own copy, not the writer's
	// larger buffer. asked is the request as http.ReadResponse reads the
	// answer to it (by its method), and
	// closeEach says the request asks to close the connection.
	request   []byte
	asked     *http.Request
	closeEach bool
	timeout   time.Duration
	// body, when not nil, must match the body of an ok answer.
	body *regexp.Regexp
	// addr is the host:port dialled; tlsConfig is nil for http.
	addr      string
	tlsConfig *tls.Config
	dialer    net.Dialer

	// mu guards conn against interrupt, which runs on the context's
	// goroutine; the worker running the probe is the only writer.
	mu   sync.Mutex
	conn net.Conn
	// raw is the TCP connection under conn, for the peek before reuse;
	// nil where the platform has no peek.
	raw syscall.RawConn
	// certExpiry is the earliest expiry of the chain conn's TLS handshake
	// presented; zero without TLS.
	certExpiry time.Time

	// in and out count what the probe in flight read and wrote, and in
	// bounds the head; limited and bodyEOF read the body. They are fields
	// so that a probe allocates none of them.
	in      connReader
	out     connWriter
	limited io.LimitedReader
	bodyEOF eofReader
	peeked  peekResult

	// peekFn and interruptFn are the peek and interrupt methods, bound
	// once.
	peekFn      func(uintptr) bool
	interruptFn func()

	// watched is the context whose cancellation interrupts the probes of
	// probeBy, and stopWatching undoes that: one registration for every
	// probe the Prober runs, rather than one per probe.
	watched      context.Context
	stopWatching func() bool
}

// newConnProbe prepares the owned-connection probe of spec: the address
// it dials and, for https, the TLS configuration built from the backend's
// tls_config by prometheus/common, with the server name net/http would
// send and a session cache, so that a new connection (keep_alive false,
// or after the backend closed the last one) resumes the TLS session.
func newConnProbe(spec *httpProbeSpec) (*connProbe, error) {
	switch scheme := spec.req.URL.Scheme; scheme {
	case "http", "https":
	default:
		// net/http's words for it.
		return nil, fmt.Errorf("unsupported protocol scheme %q", scheme)
	}
	var request bytes.Buffer
	if err := spec.req.Write(&request); err != nil {
		return nil, fmt.Errorf("probe request: %w", err)
	}
	p := &connProbe{
		request: bytes.Clone(request.Bytes()), asked: askedBy(spec.req.Method), closeEach: spec.req.Close,
		timeout: spec.timeout, body: spec.body, addr: httpclient.DialAddr(spec.req.URL),
	}
	if p.closeEach {
		// A connection that carries a single probe is closed long before
		// TCP's keep-alive would send anything; turning it on would cost
		// four system calls per probe for nothing.
		p.dialer.KeepAlive = -1
	}
	if spec.req.URL.Scheme == "https" {
		tlsConfig, err := commoncfg.NewTLSConfig(&spec.clientConfig.TLSConfig)
		if err != nil {
			return nil, fmt.Errorf("http_client_config: %w", err)
		}
		if tlsConfig.ServerName == "" {
			tlsConfig.ServerName = spec.req.URL.Hostname()
		}
		tlsConfig.ClientSessionCache = tls.NewLRUClientSessionCache(1)
		p.tlsConfig = tlsConfig
	}
	p.peekFn = p.peek
	p.interruptFn = p.interrupt
	return p, nil
}

// probe sends one probe within ctx's deadline and classifies its outcome.
// seen, when not nil, keeps the answer's head and the start of its body.
func (p *connProbe) probe(ctx context.Context, seen *seenAnswer) health.Result {
	// A cancelled probe ends its reads and writes at once; the deadline
	// set on the connection ends them at the probe timeout.
	stop := context.AfterFunc(ctx, p.interruptFn)
	defer stop()
	deadline, _ := ctx.Deadline()
	return p.send(ctx, deadline, seen)
}

// probeBy is probe ending by deadline, for the Prober, whose ctx ends
// only when it stops: that interrupts the probe in flight at once.
func (p *connProbe) probeBy(ctx context.Context, deadline time.Time) health.Result {
	if p.watched != ctx {
		p.unwatch()
		p.watched, p.stopWatching = ctx, context.AfterFunc(ctx, p.interruptFn)
	}
	return p.send(ctx, deadline, nil)
}

// unwatch stops the interruption probeBy registered.
func (p *connProbe) unwatch() {
	if p.stopWatching != nil {
		p.stopWatching()
		p.watched, p.stopWatching = nil, nil
	}
}

// release closes the connection and forgets the context probeBy
// watched: the probe's release function, called once no probe of it can
// run any more.
func (p *connProbe) release() {
	p.unwatch()
	p.closeConn()
}

// send sends one probe by deadline, ctx only cancelling it early.
func (p *connProbe) send(ctx context.Context, deadline time.Time, seen *seenAnswer) health.Result {
	trace := httptrace.ContextClientTrace(ctx)
	for attempt := 0; ; attempt++ {
		reused, err := p.connect(ctx, deadline, trace)
		if err != nil {
			return p.failure(ctx, deadline, "", err)
		}
		r, retry := p.exchange(ctx, deadline, reused, trace, seen)
		// A reused connection that failed before any byte of the answer
		// may have been closed by the backend just as the request went
		// out: the request is sent once more, on a new connection, as
		// net/http does.
		if !retry || attempt > 0 {
			return r
		}
	}
}

// connect gives the probe a connection: the kept one when it is quiet,
// a new one otherwise. It reports whether the connection was reused.
func (p *connProbe) connect(ctx context.Context, deadline time.Time, trace *httptrace.ClientTrace) (bool, error) {
	reused := false
	if p.conn != nil {
		// The deadline first: the last probe's has passed, and a
		// connection past its deadline cannot even be peeked at.
		p.conn.SetDeadline(deadline)
		if p.quiet() {
			reused = true
		} else {
			p.closeConn()
		}
	}
	if !reused {
		if err := p.dial(ctx, deadline, trace); err != nil {
			return false, err
		}
		p.conn.SetDeadline(deadline)
	}
	// interrupt may have run before the deadline was set, which undid
	// it; a context that is done by now ends the probe here instead.
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: p.conn, Reused: reused, WasIdle: reused})
	}
	return reused, nil
}

// dial opens a new connection by deadline, with its TLS handshake for
// https.
func (p *connProbe) dial(ctx context.Context, deadline time.Time, trace *httptrace.ClientTrace) error {
	// The dial, and for https the handshake, run under a context that
	// ends at the probe's deadline even where the probe's own never
	// ends: net's dialer bounds the connect by its deadline, and a name
	// lookup and a handshake end when it is done. A context that only
	// reported the deadline, sparing the timer of one, was tried for
	// dials to an IP address: it was never done at its deadline, which
	// no context may be, and the benchmark could not tell its CPU from
	// this one's (a connection per probe, 1,000 backends, beside
	// HAProxy's checks in the same rounds), though a dial now makes 7
	// more allocations.
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// The dialer's errors wrap the system call's errno (a *net.OpError
	// around an *os.SyscallError), so errors.Is tells local faults such
	// as EMFILE from the backend's.
	tcp, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return err
	}
	conn := tcp
	if p.tlsConfig != nil {
		tlsConn := tls.Client(tcp, p.tlsConfig)
		if trace != nil && trace.TLSHandshakeStart != nil {
			trace.TLSHandshakeStart()
		}
		err := tlsConn.HandshakeContext(ctx)
		state := tlsConn.ConnectionState()
		if trace != nil && trace.TLSHandshakeDone != nil {
			trace.TLSHandshakeDone(state, err)
		}
		if err != nil {
			tcp.Close()
			return err
		}
		p.certExpiry = certExpiry(&state)
		conn = tlsConn
	}
	p.mu.Lock()
	p.conn = conn
	p.mu.Unlock()
	p.in.conn, p.out.conn = conn, conn
	if !p.closeEach {
		// Only a connection kept for the next probe is peeked at.
		p.raw = rawConnOf(tcp)
	}
	return nil
}

// closeConn closes the kept connection, if any. It is also the probe's
// release function, called once no probe of it can run any more.
func (p *connProbe) closeConn() {
	p.mu.Lock()
	conn := p.conn
	p.conn = nil
	p.mu.Unlock()
	p.in.conn, p.out.conn, p.raw = nil, nil, nil
	if conn != nil {
		conn.Close()
	}
}

// closeAnswered closes the connection after an exchange that leaves it
// unfit for the next probe. After a complete answer, on a plain TCP
// connection whose backend has not closed its side, it closes with a
// reset (SO_LINGER 0), as HAProxy closes its checks: nothing is left to
// send or to read, and neither side is left in TIME_WAIT, which an
// orderly close leaves on the side that closed first for every probe
// (with keep_alive false, a connection per probe). A TLS connection is
// closed in order, so that its close_notify is not thrown away.
func (p *connProbe) closeAnswered(complete bool) {
	if tcp, ok := p.conn.(*net.TCPConn); ok && complete && !p.in.sawEOF {
		tcp.SetLinger(0)
	}
	p.closeConn()
}

// interrupt ends the reads and writes of the probe in flight at once.
func (p *connProbe) interrupt() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil {
		p.conn.SetDeadline(aLongTimeAgo)
	}
}

// exchange writes the request on the probe's connection and reads and
// classifies the answer. It reports whether the probe may be sent once
// more on a new connection: when a reused connection failed before any
// byte of the answer, for any reason but the deadline.
func (p *connProbe) exchange(ctx context.Context, deadline time.Time, reused bool, trace *httptrace.ClientTrace, seen *seenAnswer) (health.Result, bool) {
	p.out.n = 0
	if _, err := p.out.Write(p.request); err != nil {
		retry := reused && p.out.n == 0 && !isTimeout(err) && ctx.Err() == nil
		p.closeConn()
		return p.failure(ctx, deadline, "", err), retry
	}
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}

	p.in.begin(httpclient.MaxResponseHeaderBytes)
	br := borrowedReaders.Get().(*bufio.Reader)
	br.Reset(&p.in)
	defer func() {
		br.Reset(nil)
		borrowedReaders.Put(br)
	}()
	if trace != nil && trace.GotFirstResponseByte != nil {
		if peek, err := br.Peek(1); err == nil && len(peek) == 1 {
			trace.GotFirstResponseByte()
		}
	}
	resp, err := readAnswerHead(br, p.asked)
	if err != nil {
		if p.in.limit <= 0 {
			err = httpclient.ErrResponseHeaderBytes
		}
		retry := reused && p.in.n == 0 && !isTimeout(err) && ctx.Err() == nil
		p.closeConn()
		return p.failure(ctx, deadline, "", err), retry
	}
	p.in.limit = math.MaxInt64
	if seen != nil {
		// What the debug probe shows of the handshake, as net/http's
		// answers carry it; the prober has no use for it.
		if tlsConn, ok := p.conn.(*tls.Conn); ok {
			state := tlsConn.ConnectionState()
			resp.TLS = &state
		}
		seen.head = resp
	}

	// The body: at most maxBodyBytes of it, read through bodyEOF, which
	// notes whether it was read to its end. The body of a 101 is the
	// connection itself, as net/http hands it over.
	upgraded := resp.StatusCode == http.StatusSwitchingProtocols
	var body io.Reader = resp.Body
	if upgraded {
		body = br
	}
	p.bodyEOF = eofReader{r: body}
	p.limited = io.LimitedReader{R: &p.bodyEOF, N: maxBodyBytes}
	var content []byte
	if p.body != nil || seen != nil {
		content, err = io.ReadAll(&p.limited)
	} else {
		_, err = io.Copy(io.Discard, &p.limited)
	}
	whole := p.bodyEOF.eof
	p.bodyEOF, p.limited = eofReader{}, io.LimitedReader{}
	// Never Close the body: closing an unfinished one reads it to its
	// end. The connection is closed instead, unless it may be reused.
	resp.Body = http.NoBody
	if seen != nil {
		seen.keepBody(content)
	}
	if !p.reusable(resp, whole && err == nil, br) {
		p.closeAnswered(whole && err == nil)
	}
	if err != nil {
		return p.failure(ctx, deadline, fmt.Sprintf("reading the body after status %d: ", resp.StatusCode), err), false
	}
	r := health.StatusResult(resp.StatusCode)
	if p.body != nil && r.Class == health.ClassOK && !p.body.Match(content) {
		r = bodyMismatchResult(resp.StatusCode)
	}
	r.TLSCertExpiry = p.certExpiry
	return r, false
}

// reusable reports whether the connection may carry the next probe, by
// the rules net/http's Transport keeps: the request did not ask to close
// it (keep_alive false), the body was read to its end, the answer did not
// ask to close it (resp.Close: Connection: close, HTTP/1.0 without
// keep-alive, or a body that ends only with the connection), it was not a
// 101 (the connection was handed over), the backend did not close its
// side, and nothing arrived beyond the answer: bytes nobody asked for
// would be taken for the next probe's answer.
func (p *connProbe) reusable(resp *http.Response, whole bool, br *bufio.Reader) bool {
	return !p.closeEach && whole && !resp.Close && resp.StatusCode >= 200 &&
		resp.StatusCode != http.StatusSwitchingProtocols && !p.in.sawEOF && br.Buffered() == 0
}

// failure classifies an error of the probe. A probe cancelled before its
// deadline (the prober stopping) fails with the cancellation, not with the
// passed deadline its interruption set on the connection, as a probe
// through net/http does.
func (p *connProbe) failure(ctx context.Context, deadline time.Time, prefix string, err error) health.Result {
	if errors.Is(ctx.Err(), context.Canceled) {
		err = ctx.Err()
	}
	return classifyError(deadline, ctx.Err(), prefix, err, p.timeout)
}

// readAnswerHead reads the head of the answer to req, skipping 1xx answers as
// net/http does: every informational answer but 101 Switching Protocols,
// which ends the exchange. The heads of the skipped answers count toward
// the one limit on the bytes of the head, which is never reset between
// them. The answer's own head may have at most
// httpclient.MaxResponseHeaderLines lines, counted as the Transport's
// probes count them: the lines of a skipped head are parsed and dropped,
// bounded by the bytes alone.
func readAnswerHead(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if code := resp.StatusCode; code < 100 || code > 199 || code == http.StatusSwitchingProtocols {
			if httpclient.HeaderLines(resp.Header) > httpclient.MaxResponseHeaderLines {
				return nil, httpclient.ErrResponseHeaderLines
			}
			return resp, nil
		}
	}
}

// isTimeout reports whether err is a deadline's.
func isTimeout(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
}

// connReader reads the probe's connection for its buffered reader,
// counting the bytes of the answer read and bounding those of its head.
type connReader struct {
	conn net.Conn
	// n is the bytes read for the probe in flight; limit is what the
	// head may still read. sawEOF says the backend closed its side.
	n, limit int64
	sawEOF   bool
}

func (r *connReader) begin(limit int64) {
	r.n, r.limit, r.sawEOF = 0, limit, false
}

func (r *connReader) Read(b []byte) (int, error) {
	if r.limit <= 0 {
		return 0, errHeaderLimit
	}
	if int64(len(b)) > r.limit {
		b = b[:r.limit]
	}
	n, err := r.conn.Read(b)
	if err == io.EOF {
		r.sawEOF = true
	}
	r.n += int64(n)
	r.limit -= int64(n)
	return n, err
}

// connWriter writes the probe's connection, counting the bytes written.
type connWriter struct {
	conn net.Conn
	n    int
}

func (w *connWriter) Write(b []byte) (int, error) {
	n, err := w.conn.Write(b)
	w.n += n
	return n, err
}

// eofReader notes whether the reader under it reached its end.
type eofReader struct {
	r   io.Reader
	eof bool
}

func (e *eofReader) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	if err == io.EOF {
		e.eof = true
	}
	return n, err
}
