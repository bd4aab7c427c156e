package health

import (
	"errors"
	"net"
	"syscall"
)

// LocalCause reports whether err is probegate running out of a resource of
// its own rather than anything a backend did, and names that resource:
// descriptors (EMFILE, ENFILE), socket buffers or kernel memory (ENOBUFS,
// ENOMEM), local ports (EADDRNOTAVAIL, see below), or a memory budget of
// probegate's (an error with a LocalFault method, such as the fan-out's
// buffer budget). Such a failure says nothing about the backend, so
// neither a probe nor a fan-out request that meets one may judge it. The
// rule looks only at the errors wrapped in err, so it holds for every
// transport that wraps what the kernel returned (as net.OpError and
// os.SyscallError do).
//
// EADDRNOTAVAIL from a dial has two meanings: no local port is free
// (probegate's own churn), or the host has no source address from which
// to reach that destination at all (an IPv6 backend from a container
// without IPv6, ::1 where loopback has no IPv6). The second is the
// backend being unreachable from here, for good, and must take it out of
// service like any other failure to connect, or it would stay in service
// for ever. The rule tells them apart by asking the kernel to pick a
// source address for the destination (a UDP connect, which sends
// nothing): when it can, the ports ran out and the failure is local;
// when it cannot, the failure is the transport's. This costs a socket
// only on that error's path.
func LocalCause(err error) (cause string, ok bool) {
	return localCause(err, sourceAddressFor)
}

// localCause is LocalCause with the source address check as a parameter:
// reachable returns nil when the host has a source address for the
// destination, the error of the attempt otherwise.
func localCause(err error, reachable func(dest net.Addr) error) (cause string, ok bool) {
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
	switch {
	case exhausted(errno):
		return errno.Error(), true
	case errno == syscall.EADDRNOTAVAIL:
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" && op.Addr != nil {
			if checkErr := reachable(op.Addr); checkErr != nil {
				// The check running out of descriptors is local; no
				// source address for the destination is the
				// transport's failure.
				var checkErrno syscall.Errno
				if errors.As(checkErr, &checkErrno) && exhausted(checkErrno) {
					return checkErrno.Error(), true
				}
				return "", false
			}
		}
		return errno.Error(), true
	}
	return "", false
}

// exhausted reports the errors of a resource of the host's running out.
func exhausted(errno syscall.Errno) bool {
	switch errno {
	case syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM:
		return true
	}
	return false
}

// sourceAddressFor asks the kernel for a source address from which to
// reach dest: a UDP connect routes and picks one without sending.
func sourceAddressFor(dest net.Addr) error {
	tcp, ok := dest.(*net.TCPAddr)
	if !ok {
		return nil
	}
	conn, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: tcp.IP, Port: max(tcp.Port, 1), Zone: tcp.Zone})
	if err != nil {
		return err
	}
	return conn.Close()
}
