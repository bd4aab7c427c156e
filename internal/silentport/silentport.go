// Package silentport is a loopback listener that accepts connections and
// never answers on them, as a server behind a dropped route or a hung
// process does: a client's dial succeeds and its request waits.
package silentport

import (
	"net"
	"sync"
	"testing"
)

// Listen listens on a loopback port for the rest of the test, holding every
// connection it accepts open and silent, and returns its host:port. The
// listener and its connections are closed when the test ends.
func Listen(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}
