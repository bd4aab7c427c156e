package agent

import (
	"bytes"
	"errors"
	"io"

	"github.com/probegate/probegate/config"
)

// MaxLineBytes bounds a request line, its line feed (and a carriage
// return before it) included. HAProxy sends the agent-send string as it
// is written, and a backend's name fits many times over.
const MaxLineBytes = 256

// The ways a request line is refused. Each is closed without a reply.
var (
	errTooLong      = errors.New("no line feed within the line's bound")
	errUnterminated = errors.New("the client stopped before a line feed")
	errSeveralLines = errors.New("bytes after the line's line feed")
	errBadName      = errors.New("not a backend name")
)

// readName reads one request line from r and returns the backend name it
// holds. The line ends with a line feed, optionally after a carriage
// return, and is at most MaxLineBytes long; nothing may come with it
// (what would follow later is not waited for), and
// what it holds must be a name a backend may have (letters, digits, '_',
// '.', ':' and '-'), so that a NUL, a control character, a space or bytes
// that are not UTF-8 never reach a lookup. An error of r's (a read
// deadline that passed) is returned as it is.
func readName(r io.Reader) (string, error) {
	var buf [MaxLineBytes]byte
	n := 0
	for n < len(buf) {
		read, err := r.Read(buf[n:])
		n += read
		if end := bytes.IndexByte(buf[:n], '\n'); end >= 0 {
			return nameOf(buf[:end], buf[end+1:n])
		}
		if errors.Is(err, io.EOF) {
			return "", errUnterminated
		}
		if err != nil {
			return "", err
		}
	}
	return "", errTooLong
}

// nameOf is the name a line holds, rest being what was read after its
// line feed.
func nameOf(line, rest []byte) (string, error) {
	if len(rest) > 0 {
		return "", errSeveralLines
	}
	line = bytes.TrimSuffix(line, []byte("\r"))
	if !config.ValidBackendName(string(line)) {
		return "", errBadName
	}
	return string(line), nil
}
