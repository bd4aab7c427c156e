package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// rawResponses sends raw on a new connection to addr and reads every
// answer until the connection closes or, when it stays open, 3 s pass.
func rawResponses(t *testing.T, addr, raw string) (statuses []int, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for {
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return statuses, false
			}
			return statuses, true
		}
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
}

// TestAmbiguousFramingIsRefused: a request with both Content-Length and
// Transfer-Encoding is answered 400 and its connection closed, so the
// request smuggled in its body is never answered; on every listener.
func TestAmbiguousFramingIsRefused(t *testing.T) {
	addr, health, admin := freeAddr(t), freeAddr(t), freeAddr(t)
	p := launchProbegate(t, addr, "--backend=a=http://127.0.0.1:1", "--web.health-listen-address="+health, "--web.admin-listen-address="+admin, "--web.enable-lifecycle")
	p.waitServing(t)
	smuggling := "POST /ready HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"0\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, listener := range []string{addr, health, admin} {
		statuses, closed := rawResponses(t, listener, smuggling)
		if len(statuses) != 1 || statuses[0] != http.StatusBadRequest || !closed {
			t.Errorf("%s: answers %v, connection closed %v; want one 400 and the connection closed", listener, statuses, closed)
		}
	}
	// A request framed by Content-Length alone keeps its connection.
	if statuses, _ := rawResponses(t, health, "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n"); len(statuses) != 2 {
		t.Errorf("two plain requests on one connection: answers %v; want two", statuses)
	}
}

// TestOversizedHeadersAre431: a request head beyond --web.max-header-bytes
// is answered 431 on every listener, before any handler runs.
func TestOversizedHeadersAre431(t *testing.T) {
	addr, health, admin := freeAddr(t), freeAddr(t), freeAddr(t)
	p := launchProbegate(t, addr, "--backend=a=http://127.0.0.1:1", "--web.health-listen-address="+health, "--web.admin-listen-address="+admin, "--web.enable-lifecycle")
	p.waitServing(t)
	big := "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20) + "\r\n\r\n"
	for _, listener := range []string{addr, health, admin} {
		if statuses, _ := rawResponses(t, listener, big); len(statuses) != 1 || statuses[0] != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s: a 1 MiB header got %v; want 431", listener, statuses)
		}
	}
}

// TestSlowBodiesHoldNoFanoutSlot: clients trickling their POST bodies do
// not hold fanout.max_concurrent slots: with more of them than slots,
// another client's round is served at once, and each slow client gets
// 408 after fanout.request_read_timeout.
func TestSlowBodiesHoldNoFanoutSlot(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "[]") }))
	t.Cleanup(backend.Close)
	cfg := fanoutConfig(t, "  max_concurrent: 2\n  request_read_timeout: 1s\n", "", backend.URL)
	p := startProbegate(t, "--config.file="+cfg)
	addr := strings.TrimPrefix(p.base, "http://")
	var slow []*bufio.Reader
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(c, "POST /fanout/q HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n[1,")
		slow = append(slow, bufio.NewReader(c))
	}
	// No signal says that the server has read the slow heads and is in
	// their handlers; a short wait lets it get there, so that the round
	// below meets them in flight. Were the wait too short, the test would
	// pass without proving anything, never fail wrongly.
	time.Sleep(200 * time.Millisecond)
	code, header, body := fanoutGet(t, p.base+"/fanout/q", nil)
	if code != http.StatusOK || header.Get("X-Backends") != "1/1" {
		t.Errorf("a round beside 4 slow bodies and 2 slots: %d %q %s; want 200 1/1", code, header.Get("X-Backends"), body)
	}
	for i, r := range slow {
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Errorf("slow client %d: %v; want a 408", i, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("slow client %d: %d; want 408", i, resp.StatusCode)
		}
	}
}
