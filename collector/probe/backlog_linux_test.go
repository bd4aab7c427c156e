//go:build linux

package probe

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"
)

// fullBacklogURL is a loopback address whose listener never accepts and
// whose accept queue is full: Linux drops the SYN of every further
// connection, so a connect neither succeeds nor is refused before its
// deadline. The listener is made with a backlog of 0 through syscall, as
// net.Listen always asks for the system's maximum.
func fullBacklogURL(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() {
			return "http://" + addr
		}
		if err != nil {
			t.Fatalf("filling the accept queue: %v", err)
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skip("the accept queue of a loopback listener with backlog 0 did not fill up")
	return ""
}
