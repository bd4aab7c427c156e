package httpprobe

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// readTestResponse reads one response from raw with a body reader as the
// transport builds it, returning the head, the body and what is left.
func readTestResponse(raw string) (head responseHead, content, rest string, err error) {
	br := bufio.NewReaderSize(strings.NewReader(raw), 64)
	head, err = readResponseHead(br)
	if err != nil {
		return head, "", "", err
	}
	b := &body{br: br, remaining: head.contentLength, ctx: context.Background()}
	switch {
	case head.chunked:
		b.framing, b.chunks = framedByChunks, newChunkedReader(br)
	case head.contentLength < 0:
		b.framing = framedByClose
	}
	data, err := io.ReadAll(b)
	if err != nil {
		return head, string(data), "", err
	}
	left, _ := io.ReadAll(br)
	return head, string(data), string(left), nil
}

func TestReadResponseHead(t *testing.T) {
	long := strings.Repeat("v", 300)
	cases := []struct {
		name   string
		raw    string
		status int
		body   string
		close  bool
		rest   string
	}{
		{"content length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokNEXT", 200, "ok", false, "NEXT"},
		{"bare newlines", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", 200, "ok", false, ""},
		{"case and spacing", "HTTP/1.1 503 Service Unavailable\r\ncOnTeNt-LeNgTh:\t 3 \r\n\r\nbad", 503, "bad", false, ""},
		{"repeated equal lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", 200, "ok", false, ""},
		{"chunked with trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n3\r\n!!!\r\n0\r\nX-Trailer: t\r\n\r\nNEXT", 200, "ok!!!", false, "NEXT"},
		{"chunked beats length", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", 200, "ok", false, ""},
		{"until close", "HTTP/1.1 200 OK\r\n\r\nall of it", 200, "all of it", true, ""},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", 200, "", true, ""},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 200, "", true, ""},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", 200, "", false, ""},
		{"no content ignores length", "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nNEXT", 204, "", false, "NEXT"},
		{"not modified", "HTTP/1.1 304 Not Modified\r\n\r\nNEXT", 304, "", false, "NEXT"},
		{"no reason phrase", "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n", 404, "", false, ""},
		{"long fields", "HTTP/1.1 200 OK\r\nX-Long: " + long + "\r\nContent-Length: 2\r\nX-Other: " + long + "\r\n\r\nok", 200, "ok", false, ""},
		{"folded field", "HTTP/1.1 200 OK\r\nX-Folded: a\r\n b\r\nContent-Length: 2\r\n\r\nok", 200, "ok", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			head, body, rest, err := readTestResponse(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if head.status != tc.status || body != tc.body || head.close != tc.close || rest != tc.rest {
				t.Errorf("status %d body %q close %v rest %q, want %d %q %v %q", head.status, body, head.close, rest, tc.status, tc.body, tc.close, tc.rest)
			}
		})
	}
}

func TestReadResponseHeadRejectsMalformed(t *testing.T) {
	cases := []struct{ name, raw, want string }{
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", "malformed HTTP"},
		{"other version", "HTTP/2 200\r\n\r\n", "malformed HTTP version"},
		{"status too short", "HTTP/1.1 20 OK\r\n\r\n", "status code"},
		{"status not digits", "HTTP/1.1 2x0 OK\r\n\r\n", "status code"},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"},
		{"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "Content-Length"},
		{"unknown coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "transfer encoding"},
		{"field without colon", "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed MIME header"},
		{"cut off head", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", "unexpected EOF"},
		{"cut off body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok", "unexpected EOF"},
		{"bad chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := readTestResponse(tc.raw)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
}

// FuzzReadResponseHead checks the transport's framing against net/http's
// on every response both accept: same status, same body, same verdict on
// the connection.
func FuzzReadResponseHead(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.0 404 Not Found\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 500 Oops\r\n\r\nuntil close",
		"HTTP/1.1 302 Found\r\nLocation: /\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
	} {
		f.Add(seed)
	}
	req, err := http.NewRequest(http.MethodGet, "http://backend/healthz", nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		head, body, _, err := readTestResponse(raw)
		if err != nil {
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), req)
		if err != nil {
			return
		}
		want, err := io.ReadAll(resp.Body)
		if err != nil {
			return
		}
		if head.status != resp.StatusCode || body != string(want) || head.close != resp.Close {
			t.Fatalf("status %d body %q close %v; net/http: %d %q %v", head.status, body, head.close, resp.StatusCode, want, resp.Close)
		}
	})
}
