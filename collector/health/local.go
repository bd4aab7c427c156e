package health

import (
	"errors"
	"syscall"
)

// LocalCause reports whether err is probegate running out of a resource of
// its own rather than anything a backend did, and names that resource:
// descriptors (EMFILE, ENFILE), socket buffers or kernel memory (ENOBUFS,
// ENOMEM), local ports (EADDRNOTAVAIL), or a memory budget of probegate's
// (an error with a LocalFault method, such as the fan-out's buffer
// budget). Such a failure says nothing about the backend, so neither a
// probe nor a fan-out request that meets one may judge it. The rule looks
// only at the errors wrapped in err, so it holds for every transport that
// wraps what the kernel returned (as net.OpError and os.SyscallError do).
func LocalCause(err error) (cause string, ok bool) {
	if err == nil {
		return "", false
	}
	var budget interface{ LocalFault() string }
	if errors.As(err, &budget) {
		return budget.LocalFault(), true
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return "", false
	}
	switch errno {
	case syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EADDRNOTAVAIL:
		return errno.Error(), true
	}
	return "", false
}
