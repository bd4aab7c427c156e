package probe

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// cannedAnswer is a typical answer of a health endpoint, as net/http's
// server writes it.
const cannedAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Date: Tue, 01 Dec 2026 21:00:00 GMT\r\n\r\nok"

// cannedServer answers every request head on its connections with
// cannedAnswer, allocating nothing per request, so that what a test
// counts in its process is the probe's allocations alone. It returns the
// server's address.
func cannedServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { answerHeads(c) })
		}
	})
	return l.Addr().String()
}

// answerHeads writes cannedAnswer for every request head read from c
// until c closes.
func answerHeads(c net.Conn) {
	answer := []byte(cannedAnswer)
	end := []byte("\r\n\r\n")
	buf := make([]byte, 4096)
	matched := 0
	for {
		n, err := c.Read(buf)
		for _, b := range buf[:n] {
			switch {
			case b == end[matched]:
				matched++
			case b == end[0]:
				matched = 1
			default:
				matched = 0
			}
			if matched == len(end) {
				matched = 0
				if _, err := c.Write(answer); err != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// maxAllocsPerProbe is the most allocations a probe on its own
// connection may make, the answer's parsing by net/http included.
const maxAllocsPerProbe = 10

// TestOwnConnectionProbeAllocations: a probe on its own kept-alive
// connection makes at most maxAllocsPerProbe allocations.
func TestOwnConnectionProbeAllocations(t *testing.T) {
	target := httpTarget(t, nil, "http://"+cannedServer(t)+"/healthz", 5*time.Second, probePath{name: "own connection"})
	ctx := context.Background()
	var failed error
	probe := func() {
		if r := target.run(ctx, time.Now); r.Class != health.ClassOK && failed == nil {
			failed = errors.New(r.Err)
		}
	}
	for range 10 {
		probe()
	}
	allocs := testing.AllocsPerRun(500, probe)
	if failed != nil {
		t.Fatalf("a probe failed: %v", failed)
	}
	t.Logf("%.1f allocations per probe", allocs)
	if allocs > maxAllocsPerProbe {
		t.Errorf("%.1f allocations per probe, want at most %d", allocs, maxAllocsPerProbe)
	}
}
