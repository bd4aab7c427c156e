package main

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// headOfSize is a GET request head of exactly size bytes, padded by one
// header field.
func headOfSize(path string, size int) string {
	const start, end = "Host: 127.0.0.1\r\nX-Pad: ", "\r\n\r\n"
	line := "GET " + path + " HTTP/1.1\r\n"
	return line + start + strings.Repeat("a", size-len(line)-len(start)-len(end)) + end
}

// statusOf sends raw on a new connection to addr and returns the answer's
// status.
func statusOf(t *testing.T, addr, raw string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHeadLimitIsTheFlags: a head of --web.max-header-bytes is read, and
// one of a byte more is answered 431, on the admin listener; the health
// listener does the same at its own 8 KiB.
func TestHeadLimitIsTheFlags(t *testing.T) {
	o := &options{ReplicaName: "gate-a", ReadTimeout: model.Duration(time.Minute)}
	o.AdminListenAddress, o.MaxHeaderBytes, o.ReadHeaderTimeout = "127.0.0.1:0", 16<<10, model.Duration(time.Minute)
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, c := range []struct {
		name  string
		srv   *http.Server
		path  string
		limit int
	}{
		{"admin", o.adminServer(ok), "/", 16 << 10},
		{"health", o.healthServer(ok, ok), "/health", 8 << 10},
	} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go c.srv.Serve(l)
		for size, want := range map[int]int{c.limit: http.StatusOK, c.limit + 1: http.StatusRequestHeaderFieldsTooLarge} {
			if got := statusOf(t, l.Addr().String(), headOfSize(c.path, size)); got != want {
				t.Errorf("%s listener, limit %d: a head of %d bytes got %d; want %d", c.name, c.limit, size, got, want)
			}
		}
		c.srv.Close()
	}
}
