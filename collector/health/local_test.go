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
