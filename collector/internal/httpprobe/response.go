package httpprobe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"sync"
)

// responseHead is what a probe needs of a response head: the status and
// how the body is delimited. Every other header field is skipped without
// being stored, which is what makes reading a head allocation-free.
type responseHead struct {
	proto        string
	major, minor int
	status       int
	// statusText is the status line after the protocol, "200 OK".
	statusText string
	// contentLength is -1 when the head does not give one.
	contentLength int64
	chunked       bool
	// close is set when the connection ends with this response.
	close bool
}

// readResponseHead reads a status line and header fields, interpreting
// them as net/http's ReadResponse does for framing: Content-Length,
// Transfer-Encoding: chunked and Connection.
func readResponseHead(br *bufio.Reader) (responseHead, error) {
	h := responseHead{contentLength: -1}
	line, err := readLine(br)
	if err != nil {
		return h, err
	}
	if err := h.parseStatusLine(line); err != nil {
		return h, err
	}
	keepAlive := false
	for {
		line, err := readLine(br)
		if err != nil {
			return h, err
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			// An obsolete folded continuation of the field before.
			// Framing fields are short; folding one is an attack.
			continue
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || bytes.ContainsAny(name, " \t") {
			return h, fmt.Errorf("malformed MIME header line: %q", line)
		}
		value = bytes.Trim(value, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, ok := parseContentLength(value)
			if !ok || (h.contentLength >= 0 && n != h.contentLength) {
				return h, fmt.Errorf("bad Content-Length %q", value)
			}
			h.contentLength = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if h.minor == 0 {
				// HTTP/1.0 has no transfer codings; net/http ignores them.
				continue
			}
			if !bytes.EqualFold(value, []byte("chunked")) {
				return h, fmt.Errorf("unsupported transfer encoding: %q", value)
			}
			h.chunked = true
		case bytes.EqualFold(name, []byte("Connection")):
			for token := range bytes.SplitSeq(value, []byte(",")) {
				token = bytes.Trim(token, " \t")
				h.close = h.close || bytes.EqualFold(token, []byte("close"))
				keepAlive = keepAlive || bytes.EqualFold(token, []byte("keep-alive"))
			}
		}
	}
	if h.minor == 0 && !keepAlive {
		h.close = true
	}
	switch {
	case h.status/100 == 1 || h.status == http.StatusNoContent || h.status == http.StatusNotModified:
		h.contentLength, h.chunked = 0, false
	case h.chunked:
		// Chunking decides; a Content-Length beside it is ignored.
		h.contentLength = -1
	case h.contentLength < 0:
		// The body runs until the server closes the connection.
		h.close = true
	}
	return h, nil
}

func (h *responseHead) parseStatusLine(line []byte) error {
	proto, rest, ok := bytes.Cut(line, []byte(" "))
	switch {
	case !ok:
		return fmt.Errorf("malformed HTTP response %q", line)
	case string(proto) == "HTTP/1.1":
		h.proto, h.major, h.minor = "HTTP/1.1", 1, 1
	case string(proto) == "HTTP/1.0":
		h.proto, h.major, h.minor = "HTTP/1.0", 1, 0
	default:
		return fmt.Errorf("malformed HTTP version %q", proto)
	}
	rest = bytes.TrimLeft(rest, " ")
	code, _, _ := bytes.Cut(rest, []byte(" "))
	if len(code) != 3 || code[0] < '0' || code[0] > '9' || code[1] < '0' || code[1] > '9' || code[2] < '0' || code[2] > '9' {
		return fmt.Errorf("malformed HTTP status code %q", code)
	}
	h.status = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	h.statusText = string(rest)
	return nil
}

func parseContentLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// readLine returns the next line without its line ending. The slice is
// valid until the next read. A line longer than the reader's buffer is
// read through and returned cut at the buffer's size: only framing fields
// are interpreted, and those are short.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// Keep the start (name and beginning of the value) and discard
		// the rest; copying is needed as the buffer is reused.
		start := bytes.Clone(line)
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		line = start
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

// bodyFraming says how a body ends.
type bodyFraming uint8

const (
	framedByLength bodyFraming = iota
	framedByChunks
	framedByClose
)

// body is a response body on a transport connection. It lives in its
// connection and serves one exchange at a time. Reading it to its end and
// closing it returns the connection to the transport; closing it early
// closes the connection, and the rest is never read.
type body struct {
	t       *Transport
	c       *conn
	br      *bufio.Reader
	framing bodyFraming
	// remaining is what is left of a body framed by length.
	remaining int64
	chunks    io.Reader
	// stop unregisters the cancellation hook; it reports false once
	// cancellation already poisoned the connection's deadline.
	stop      func() bool
	ctx       context.Context
	keepAlive bool
	sawEOF    bool
	failed    bool
	closed    bool
}

// maxTrailerBytes bounds the trailer section after a chunked body.
const maxTrailerBytes = 16 << 10

// Read implements io.Reader.
func (b *body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errors.New("httpprobe: read on closed body")
	}
	if b.sawEOF {
		// A chunked body would otherwise look for another trailer and
		// wait for the next response's bytes.
		return 0, io.EOF
	}
	var n int
	var err error
	switch b.framing {
	case framedByLength:
		if b.remaining == 0 {
			b.sawEOF = true
			return 0, io.EOF
		}
		if int64(len(p)) > b.remaining {
			p = p[:b.remaining]
		}
		n, err = b.br.Read(p)
		b.remaining -= int64(n)
		switch {
		case b.remaining == 0:
			// The end comes with the last byte, so that a reader that
			// stops at the length still sees it.
			err = io.EOF
		case errors.Is(err, io.EOF):
			err = io.ErrUnexpectedEOF
		}
	case framedByChunks:
		n, err = b.chunks.Read(p)
		if errors.Is(err, io.EOF) {
			if trailerErr := skipTrailer(b.br); trailerErr != nil {
				err = trailerErr
			}
		}
	case framedByClose:
		n, err = b.br.Read(p)
	}
	switch {
	case errors.Is(err, io.EOF):
		b.sawEOF = true
	case err != nil:
		b.failed = true
		err = contextError(b.ctx, err)
	}
	return n, err
}

// skipTrailer reads the trailer section after the last chunk, up to its
// empty line, so the connection is left at the next response.
func skipTrailer(br *bufio.Reader) error {
	read := 0
	for {
		line, err := readLine(br)
		if err != nil {
			return err
		}
		if len(line) == 0 {
			return nil
		}
		if read += len(line); read > maxTrailerBytes {
			return errors.New("response trailer too large")
		}
	}
}

// Close implements io.Closer.
func (b *body) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	notCancelled := b.stop()
	reusable := b.keepAlive && b.sawEOF && !b.failed && notCancelled && b.br.Buffered() == 0
	b.br.Reset(nil)
	readers.Put(b.br)
	b.br = nil
	if reusable {
		// The deadline stays; the next exchange sets its own. Nothing may
		// touch the body after this: the connection can be in use again.
		b.t.putIdle(b.c)
	} else {
		b.c.Close()
	}
	return nil
}

// discardBuffers lends the buffers Discard reads into.
var discardBuffers = sync.Pool{New: func() any { return new([8 << 10]byte) }}

// Discard reads and drops at most limit bytes of body, without allocating.
// It returns nil at the body's end and at the limit alike.
func Discard(body io.Reader, limit int) error {
	buf := discardBuffers.Get().(*[8 << 10]byte)
	defer discardBuffers.Put(buf)
	for left := limit; left > 0; {
		n, err := body.Read(buf[:min(left, len(buf))])
		left -= n
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// newChunkedReader decodes a chunked body from br.
func newChunkedReader(br *bufio.Reader) io.Reader { return httputil.NewChunkedReader(br) }
