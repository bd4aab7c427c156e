// Package deadport reserves a loopback TCP port that refuses connections.
//
// A port that was listened on and closed is free for anyone: another
// server can take it and answer in the dead backend's place. A socket that
// is bound but never listens holds the port, and the kernel refuses every
// connection to it.
package deadport

import (
	"fmt"
	"syscall"
)

// Reserve binds a loopback port without listening on it and returns its
// http:// URL. The port refuses connections until release is called.
func Reserve() (url string, release func() error, err error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return "", nil, fmt.Errorf("socket for a dead port: %w", err)
	}
	release = func() error { return syscall.Close(fd) }
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		release()
		return "", nil, fmt.Errorf("bind a dead port: %w", err)
	}
	addr, err := syscall.Getsockname(fd)
	if err != nil {
		release()
		return "", nil, fmt.Errorf("name of a dead port: %w", err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", addr.(*syscall.SockaddrInet4).Port), release, nil
}
