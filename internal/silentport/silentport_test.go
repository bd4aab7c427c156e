package silentport

import (
	"net"
	"testing"
	"time"
)

// TestAcceptsAndNeverAnswers: a dial succeeds and a read waits for ever
// (here, past its deadline).
func TestAcceptsAndNeverAnswers(t *testing.T) {
	conn, err := net.Dial("tcp", Listen(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := conn.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("read %d bytes, %v; want nothing until the deadline", n, err)
	}
}
