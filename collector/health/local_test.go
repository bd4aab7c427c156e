package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
)

// budgetFault stands for a memory budget of probegate's, which names
// itself through a LocalFault method.
type budgetFault struct{}

func (budgetFault) Error() string      { return "budget full" }
func (budgetFault) LocalFault() string { return "memory budget" }

// TestLocalCause: probegate's own exhaustion, however a transport wraps
// it, is local; anything a backend can cause is not.
func TestLocalCause(t *testing.T) {
	dialFailing := func(errno syscall.Errno) error {
		return fmt.Errorf("probe: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", errno)})
	}
	for _, c := range []struct {
		err   error
		cause string
	}{
		{dialFailing(syscall.EMFILE), "too many open files"},
		{dialFailing(syscall.ENFILE), "too many open files in system"},
		{dialFailing(syscall.ENOBUFS), "no buffer space available"},
		{dialFailing(syscall.ENOMEM), "cannot allocate memory"},
		{dialFailing(syscall.EADDRNOTAVAIL), "cannot assign requested address"},
		{fmt.Errorf("reading the body: %w", budgetFault{}), "memory budget"},
	} {
		cause, ok := LocalCause(c.err)
		if !ok || cause != c.cause {
			t.Errorf("LocalCause(%v) = %q, %v; want %q, true", c.err, cause, ok, c.cause)
		}
	}
	for _, err := range []error{
		nil,
		dialFailing(syscall.ECONNREFUSED),
		dialFailing(syscall.ECONNRESET),
		dialFailing(syscall.EHOSTUNREACH),
		context.DeadlineExceeded,
		errors.New("too many open files"), // the words alone are no errno
	} {
		if cause, ok := LocalCause(err); ok {
			t.Errorf("LocalCause(%v) = %q, true; want not local", err, cause)
		}
	}
}

// TestLocalResultChangesNoState: a probe failing for a reason of
// probegate's own, however many in a row, leaves a healthy backend
// healthy with its runs as they were.
func TestLocalResultChangesNoState(t *testing.T) {
	th := Thresholds{Failures: 3, Successes: 2}
	var h Health
	for range 2 {
		h = h.Step(StatusResult(200), th)
	}
	before := h
	for range 10 {
		r, cause, local := LocalResult(TransportError("", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.EMFILE}))
		if !local || cause == "" || r.Reason != ReasonLocal || r.Cause != nil {
			t.Fatalf("LocalResult = %+v, %q, %v; want a local result without its cause", r, cause, local)
		}
		h = h.Step(r, th)
	}
	if h != before {
		t.Errorf("after 10 local failures %+v, want %+v", h, before)
	}
	r, _, local := LocalResult(TransportError("", syscall.ECONNREFUSED))
	if local || r.Reason != ReasonTransport || r.Cause != nil {
		t.Errorf("a refused connection became %+v (local %v), want a transport failure without its cause", r, local)
	}
}

// TestAddressNotAvailableIsLocalOnlyWithASourceAddress: EADDRNOTAVAIL on
// a dial is local when the host has a source address for the destination
// (its ports ran out), and a transport failure when it has none (an IPv6
// backend from a host without IPv6), so that such a backend is taken out
// of service instead of staying unknown for ever.
func TestAddressNotAvailableIsLocalOnlyWithASourceAddress(t *testing.T) {
	ipv6 := &net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 80}
	dial := fmt.Errorf("probe: %w", &net.OpError{Op: "dial", Net: "tcp", Addr: ipv6, Err: os.NewSyscallError("connect", syscall.EADDRNOTAVAIL)})
	for _, c := range []struct {
		name      string
		reachable error
		cause     string
		local     bool
	}{
		{"a source address: the ports ran out", nil, "cannot assign requested address", true},
		{"no route for the family", os.NewSyscallError("connect", syscall.ENETUNREACH), "", false},
		{"no source address for the family", os.NewSyscallError("connect", syscall.EADDRNOTAVAIL), "", false},
		{"the check ran out of descriptors", os.NewSyscallError("socket", syscall.EMFILE), "too many open files", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked net.Addr
			cause, local := localCause(dial, func(dest net.Addr) error {
				asked = dest
				return c.reachable
			})
			if cause != c.cause || local != c.local {
				t.Errorf("localCause = %q, %v; want %q, %v", cause, local, c.cause, c.local)
			}
			if asked != ipv6 {
				t.Errorf("checked %v, want the dialled %v", asked, ipv6)
			}
		})
	}
	// The real check finds a source address for loopback.
	loopback := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, Err: syscall.EADDRNOTAVAIL}
	if cause, local := LocalCause(loopback); !local || cause != "cannot assign requested address" {
		t.Errorf("LocalCause(EADDRNOTAVAIL to 127.0.0.1) = %q, %v; want local", cause, local)
	}
}
