package probe

import (
	"net"
	"syscall"
)

// peekResult is what the last peek at an idle connection saw.
type peekResult struct {
	buf [1]byte
	n   int
	err error
}

// rawConnOf is the raw connection under a TCP connection, for peeking.
func rawConnOf(c net.Conn) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// quiet reports whether the kept connection has nothing to say before
// the next request: no byte nobody asked for, no end (a FIN) and no
// error (a reset). net/http's Transport learns the same from the read it
// keeps pending on every idle connection; a probe learns it from one
// non-blocking peek at the socket, which takes nothing from it. Of a TLS
// connection it is the socket under TLS that is peeked: any record that
// arrives while the connection is idle makes it unfit, since the session
// tickets a server sends after the handshake have been read with the
// first answer. The connection's deadline must be ahead.
func (p *connProbe) quiet() bool {
	if p.raw == nil {
		return true
	}
	if err := p.raw.Read(p.peekFn); err != nil {
		return false
	}
	// Nothing waiting is EAGAIN; 0 bytes without an error is the FIN.
	return p.peeked.err == syscall.EAGAIN
}

// peek looks at the socket fd without blocking and without taking what
// it sees. It is the function raw.Read calls, bound once as peekFn.
func (p *connProbe) peek(fd uintptr) bool {
	p.peeked.n, _, p.peeked.err = syscall.Recvfrom(int(fd), p.peeked.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return true
}
