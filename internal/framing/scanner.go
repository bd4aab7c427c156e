package framing

import (
	"bytes"
	"strconv"
)

// keptLine is how much of a line the scanner keeps: enough for any
// framing field, so that a connection costs a few hundred bytes at most
// whatever its lines. A framing field longer than this stops the scan.
const keptLine = 256

// scanner follows the request heads of one connection as bytes arrive,
// in whatever pieces. It reads each head's lines, skips a body framed by
// Content-Length, and stops at the first head with a Transfer-Encoding:
// Handler closes the connection after that request, so no head follows
// it. It stops too at anything it cannot frame (a bad Content-Length, an
// overlong framing field); net/http refuses such a request itself, and a
// request with a Transfer-Encoding closes its connection whatever the scan
// found.
type scanner struct {
	state int
	line  []byte
	// long is set when the current line is longer than what is kept.
	long bool
	// body is how many bytes of a Content-Length body are still to come.
	body int64
	// The current head: whether it has started, and its framing fields.
	started, contentLength, transferEncoding bool
	length                                   int64
}

const (
	inHead = iota
	inBody
	stopped
)

// feed scans p and reports whether it completed a head with both
// Content-Length and Transfer-Encoding.
func (s *scanner) feed(p []byte) bool {
	for len(p) > 0 {
		switch s.state {
		case stopped:
			return false
		case inBody:
			n := int64(len(p))
			if n > s.body {
				n = s.body
			}
			s.body -= n
			p = p[n:]
			if s.body == 0 {
				s.state = inHead
			}
		case inHead:
			i := bytes.IndexByte(p, '\n')
			if i < 0 {
				s.keep(p)
				return false
			}
			s.keep(p[:i])
			p = p[i+1:]
			if s.state == stopped {
				return false
			}
			if s.endOfLine() {
				return true
			}
		}
	}
	return false
}

// keep adds part of a line, up to keptLine bytes of it.
func (s *scanner) keep(part []byte) {
	if room := keptLine - len(s.line); len(part) > room {
		part, s.long = part[:max(room, 0)], true
	}
	s.line = append(s.line, part...)
}

// endOfLine handles one whole line of a head and reports whether it ended
// a head with both framing fields.
func (s *scanner) endOfLine() bool {
	line, long := bytes.TrimSuffix(s.line, []byte("\r")), s.long
	s.line, s.long = s.line[:0], false
	if len(line) > 0 {
		if s.started {
			s.field(line, long)
		}
		s.started = true // The request line.
		return false
	}
	if !s.started {
		return false // An empty line before a request line is allowed.
	}
	ambiguous := s.contentLength && s.transferEncoding
	switch {
	case s.transferEncoding:
		s.state = stopped
	case s.length > 0:
		s.state, s.body = inBody, s.length
	}
	s.started, s.contentLength, s.transferEncoding, s.length = false, false, false, 0
	return ambiguous
}

// field notes a header field that frames the body; long says that the
// line was cut.
func (s *scanner) field(line []byte, long bool) {
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return
	}
	framing := bytes.EqualFold(name, []byte("Transfer-Encoding")) || bytes.EqualFold(name, []byte("Content-Length"))
	if framing && long {
		s.state = stopped
		return
	}
	switch {
	case bytes.EqualFold(name, []byte("Transfer-Encoding")):
		s.transferEncoding = true
	case bytes.EqualFold(name, []byte("Content-Length")):
		n, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
		if err != nil || n < 0 || (s.contentLength && n != s.length) {
			s.state = stopped
			return
		}
		s.contentLength, s.length = true, n
	}
}
