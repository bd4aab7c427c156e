package httpclient

import (
	"fmt"
	"net/http"
)

// The bounds of an answer's head. A health check never needs a large
// head (HAProxy's check buffer is 16 KiB), and a backend that sends one
// must not make probegate read and parse it: net/http's own bound, 10
// MiB, let 40 hostile backends take a probegate to 1.38 GB. The bytes are
// those of the heads of an answer, the 1xx heads before it included, read
// before any is parsed; the lines are those of the answer's own head,
// counted as net/http parsed it (a folded line with the line it
// continues). The Transport bounds the bytes of every answer, fan-out
// answers included; the lines are counted by the probes.
const (
	MaxResponseHeaderBytes = 64 << 10
	MaxResponseHeaderLines = 256
)

// ErrResponseHeaderBytes is the error of a head past
// MaxResponseHeaderBytes, in net/http's words; ErrResponseHeaderLines
// that of a head past MaxResponseHeaderLines.
var (
	ErrResponseHeaderBytes = fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", MaxResponseHeaderBytes)
	ErrResponseHeaderLines = fmt.Errorf("server response headers exceeded %d lines; aborted", MaxResponseHeaderLines)
)

// HeaderLines is the number of header lines of a head as net/http parsed
// it into h: a value for every line, a folded line counted with the line
// it continues.
func HeaderLines(h http.Header) int {
	n := 0
	for _, values := range h {
		n += len(values)
	}
	return n
}
