package deadport

import (
	"net"
	"strings"
	"testing"
)

func TestReservedPortRefusesAndStaysTaken(t *testing.T) {
	url, release, err := Reserve()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	addr := strings.TrimPrefix(url, "http://")
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Fatal("a connection to the reserved port was accepted")
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatal("another listener could take the reserved port")
	}
}
