//go:build !linux

package probe

import (
	"net"
	"syscall"
)

// peekResult is empty where there is no peek.
type peekResult struct{}

// rawConnOf is nil where there is no peek: an idle connection is then
// taken as quiet, and a stale one fails the probe that reuses it, which
// is retried once on a new connection.
func rawConnOf(net.Conn) syscall.RawConn { return nil }

func (p *connProbe) quiet() bool { return true }

func (p *connProbe) peek(uintptr) bool { return true }
