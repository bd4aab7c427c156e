package framing

import (
	"bytes"
	"strconv"
)

// keptLine is how much of a line the scanner keeps: enough for the name
// of any framing field, so that a connection costs a few hundred bytes at
// most whatever its lines. A framing field is known by its name alone; a
// Content-Length whose value is cut, or does not parse, leaves the body's
// end unknown and stops the scan after its head.
const keptLine = 256

// scanner follows the request heads of one connection as bytes arrive,
// in whatever pieces. It reads each head's lines, skips a body framed by
// Content-Length, and stops after the first head with a Transfer-Encoding
// or with a Content-Length it cannot read (cut, folded, not a number):
// from there on it cannot tell where the next head starts, so Handler
// closes the connection after the request being served.
type scanner struct {
	state int
	line  []byte
	// long is set when the current line is longer than what is kept.
	long bool
	// body is how many bytes of a Content-Length body are still to come.
	body int64
	// The current head: whether it has started, its framing fields, and
	// whether its Content-Length could not be read.
	started, contentLength, transferEncoding, unreadLength bool
	length                                                 int64
}

const (
	inHead = iota
	inBody
	stopped
)

// feed scans p and returns how many of its bytes come up to the end of a
// head with both Content-Length and Transfer-Encoding, or -1 when p
// completes no such head.
func (s *scanner) feed(p []byte) int {
	size := len(p)
	for len(p) > 0 {
		switch s.state {
		case stopped:
			return -1
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
				return -1
			}
			s.keep(p[:i])
			p = p[i+1:]
			if s.endOfLine() {
				return size - len(p)
			}
		}
	}
	return -1
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
	case s.transferEncoding || s.unreadLength:
		s.state = stopped
	case s.length > 0:
		s.state, s.body = inBody, s.length
	}
	s.started, s.contentLength, s.transferEncoding, s.unreadLength, s.length = false, false, false, false, 0
	return ambiguous
}

// stopped reports whether the scan has stopped: the heads that follow, if
// any, are not watched.
func (s *scanner) stopped() bool {
	return s.state == stopped
}

// field notes a header field that frames the body by its name, whatever
// its value; long says that the line was cut.
func (s *scanner) field(line []byte, long bool) {
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return
	}
	switch {
	case bytes.EqualFold(name, []byte("Transfer-Encoding")):
		s.transferEncoding = true
	case bytes.EqualFold(name, []byte("Content-Length")):
		n, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
		if long || err != nil || n < 0 || (s.contentLength && n != s.length) {
			s.unreadLength = true
		}
		s.contentLength, s.length = true, n
	}
}
