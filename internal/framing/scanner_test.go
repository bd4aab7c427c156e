package framing

import (
	"strings"
	"testing"
)

// TestScannerFindsAmbiguousHeads: a head with both framing fields is
// found wherever the stream is cut, also after requests with and without
// a body; a body that looks like such a head is skipped; nothing after a
// chunked request is scanned.
func TestScannerFindsAmbiguousHeads(t *testing.T) {
	const ambiguous = "POST /fanout/q HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n"
	for _, c := range []struct {
		name   string
		stream string
		want   bool
	}{
		{"alone", ambiguous, true},
		{"fields the other way round", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n", true},
		{"after a GET", "\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n" + ambiguous, true},
		{"after a body", "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc" + ambiguous, true},
		{"inside a body", "POST / HTTP/1.1\r\ncontent-length: 88\r\n\r\n" + ambiguous, false},
		{"chunked alone", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false},
		{"after a chunked request", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + ambiguous, false},
		{"content-length alone", "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\nGET / HTTP/1.1\r\n\r\n", false},
		{"a long Transfer-Encoding line", "POST / HTTP/1.1\r\nTransfer-Encoding:" + strings.Repeat(" ", 300) + "chunked\r\nContent-Length: 4\r\n\r\n", true},
		{"a long Content-Length line", "POST / HTTP/1.1\r\nContent-Length:" + strings.Repeat(" ", 300) + "4\r\nTransfer-Encoding: chunked\r\n\r\n", true},
		{"a folded Content-Length", "POST / HTTP/1.1\r\nContent-Length:\r\n 4\r\nTransfer-Encoding: chunked\r\n\r\n", true},
		{"after long lines", "GET /" + strings.Repeat("a", 5000) + " HTTP/1.1\r\nX-Pad: " + strings.Repeat("b", 5000) + "\r\n\r\n" + ambiguous, true},
	} {
		for _, size := range []int{1, 2, 7, len(c.stream)} {
			var s scanner
			got := false
			for i := 0; i < len(c.stream); i += size {
				got = s.feed([]byte(c.stream[i:min(i+size, len(c.stream))])) >= 0 || got
			}
			if got != c.want {
				t.Errorf("%s, fed %d bytes at a time: ambiguous %v; want %v", c.name, size, got, c.want)
			}
		}
	}
}

// TestScannerKeepsLittleOfALongLine: a line without end, as an attacker
// sends it, costs the connection no more than keptLine bytes.
func TestScannerKeepsLittleOfALongLine(t *testing.T) {
	var s scanner
	chunk := []byte(strings.Repeat("x", 4096))
	for range 256 {
		s.feed(chunk)
	}
	if cap(s.line) > 2*keptLine {
		t.Errorf("after 1 MiB of one line the scanner holds %d bytes; want at most %d", cap(s.line), 2*keptLine)
	}
}

// TestScannerFindsTheEndOfAnAmbiguousHead: feed returns the offset just
// past the head with both framing fields, so that nothing after it is
// passed on.
func TestScannerFindsTheEndOfAnAmbiguousHead(t *testing.T) {
	const before, head = "GET / HTTP/1.1\r\n\r\n", "POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
	var s scanner
	if got, want := s.feed([]byte(before+head+"0\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n")), len(before+head); got != want {
		t.Errorf("feed returned %d; want %d, the end of the ambiguous head", got, want)
	}
}
