package probe

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/httpclient"
)

// headOfLines is a 200 head of exactly lines header lines, an empty body
// among them.
func headOfLines(status string, lines int) string {
	headers := make([]string, 0, lines)
	for i := range lines - 1 {
		headers = append(headers, fmt.Sprintf("X-Line-%d: a", i))
	}
	return head(status, append(headers, "Content-Length: 0")...)
}

// headOfBytes is a 200 head of exactly size bytes, the blank line
// included, with an empty body: lines of about 4 KiB.
func headOfBytes(size int) string {
	const start, end = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n", "\r\n"
	const name, crlf, longest = "X-Pad: ", "\r\n", 4 << 10
	left := size - len(start) - len(end)
	lines := (left + len(name) + len(crlf) + longest - 1) / (len(name) + len(crlf) + longest)
	values := left - lines*(len(name)+len(crlf))
	var b strings.Builder
	b.WriteString(start)
	for i := range lines {
		// The values' bytes spread over the lines, the first ones a byte
		// longer where they do not divide evenly.
		value := values / lines
		if i < values%lines {
			value++
		}
		b.WriteString(name + strings.Repeat("a", value) + crlf)
	}
	b.WriteString(end)
	return b.String()
}

// headBoundCases are the hostile cases of heads at and beyond their
// bounds: httpclient.MaxResponseHeaderBytes over all the heads of an
// answer, httpclient.MaxResponseHeaderLines in the answer's own head. Both
// paths fail a head beyond either as a transport failure and do not reuse
// its connection.
func headBoundCases() []hostileCase {
	maxBytes, maxLines := httpclient.MaxResponseHeaderBytes, httpclient.MaxResponseHeaderLines
	hint := "HTTP/1.1 103 Early Hints\r\nLink: a\r\n\r\n"
	var shortLines strings.Builder
	shortLines.WriteString("HTTP/1.1 200 OK\r\n")
	for i := 0; shortLines.Len() < maxBytes-100; i++ {
		fmt.Fprintf(&shortLines, "%x:\n", i)
	}
	shortLines.WriteString("Content-Length: 0\r\n\r\n")
	return []hostileCase{
		{name: "head of exactly the byte limit", serve: answerEach(headOfBytes(maxBytes)), want: okResult, conns: 1},
		{name: "head a byte over the byte limit", serve: answerEach(headOfBytes(maxBytes + 1)), want: transportResult, conns: 2},
		{name: "1xx head and head of exactly the byte limit", serve: answerEach(hint + headOfBytes(maxBytes-len(hint))), want: okResult, conns: 1},
		{name: "1xx head and head a byte over the byte limit", serve: answerEach(hint + headOfBytes(maxBytes-len(hint)+1)), want: transportResult, conns: 2},
		{name: "head of exactly the line limit", serve: answerEach(headOfLines("HTTP/1.1 200 OK", maxLines)), want: okResult, conns: 1},
		{name: "head a line over the line limit", serve: answerEach(headOfLines("HTTP/1.1 200 OK", maxLines+1)), want: transportResult, conns: 2},
		{name: "1xx heads of more lines than the limit", serve: answerEach(strings.Repeat(headOfLines("HTTP/1.1 103 Early Hints", 2*maxLines), 3) + empty200),
			want: okResult, conns: 1},
		{name: "1xx head and a head a line over the line limit", serve: answerEach(headOfLines("HTTP/1.1 103 Early Hints", 2) + headOfLines("HTTP/1.1 200 OK", maxLines+1)),
			want: transportResult, conns: 2},
		{name: "folded lines count with the line they continue", serve: answerEach(head("HTTP/1.1 200 OK",
			strings.Repeat("X-Folded: a\r\n b\r\n", maxLines-1)+"Content-Length: 0")), want: okResult, conns: 1},
		{name: "head of short lines within the byte limit", serve: answerEach(shortLines.String()), want: transportResult, conns: 2},
		{name: "lines that never end", quick: true, serve: answerOnce(func(c *hostileConn) bool {
			if c.write("HTTP/1.1 200 OK\r\n") {
				c.repeat(strings.Repeat("a:\r\n", 1<<10), 0)
			}
			return false
		}), want: transportResult, conns: 2},
	}
}

// TestProbeHeadBoundsItsMemory: a backend that sends a head without end,
// in lines as short as a header line can be, costs a probe a bounded
// allocation on each path: each reads httpclient.MaxResponseHeaderBytes
// of it and no more, and parses what it read. Without the bound a probe
// read and parsed 10 MiB of head, and allocated hundreds of MiB for it.
func TestProbeHeadBoundsItsMemory(t *testing.T) {
	// A wide margin over what parsing 64 KiB of the shortest lines
	// allocates (about 2 MiB), far under what 10 MiB of them cost.
	const bound = 8 << 20
	lines := make([]byte, 0, 1<<20)
	for i := 0; len(lines) < cap(lines)-16; i++ {
		lines = fmt.Appendf(lines, "%x:\r\n", i)
	}
	for _, path := range probePaths() {
		t.Run(path.name, func(t *testing.T) {
			url := listenRaw(t, func(c net.Conn) {
				if !readHead(c) {
					return
				}
				if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\n")); err != nil {
					return
				}
				for range 10 {
					if _, err := c.Write(lines); err != nil {
						return
					}
				}
			})
			target := httpTarget(t, newClient(t), url+"/healthz", 5*time.Second, path)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			r := target.run(t.Context(), time.Now)
			runtime.ReadMemStats(&after)
			if r.Class != health.ClassFailed || r.Reason != health.ReasonTransport {
				t.Errorf("got %+v, want a transport failure", r)
			}
			if allocated := after.TotalAlloc - before.TotalAlloc; allocated > bound {
				t.Errorf("the probe allocated %.1f MiB, want at most %.1f", float64(allocated)/(1<<20), float64(bound)/(1<<20))
			} else {
				t.Logf("the probe allocated %.2f MiB", float64(allocated)/(1<<20))
			}
		})
	}
}
