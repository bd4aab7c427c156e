package demo

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDeadBackendResetsAndHoldsItsPort: the dead backend never answers, it
// resets the connection, and no other server can take its port and answer
// in its place while the demo runs.
func TestDeadBackendResetsAndHoldsItsPort(t *testing.T) {
	url, stop, err := listenDead()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	addr := strings.TrimPrefix(url, "http://")
	for range 3 {
		if n, err := ask(addr); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("read %d bytes, err %v: want the connection reset", n, err)
		}
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatal("another listener could take the dead backend's port")
	}
}

// ask sends a probe's request to addr and reads the first byte of the
// answer. On loopback the reset may come before the dial returns.
func ask(addr string) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: dead\r\n\r\n")); err != nil {
		return 0, err
	}
	return conn.Read(make([]byte, 1))
}
