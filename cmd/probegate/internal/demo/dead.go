package demo

import (
	"net"
	"sync"
)

// listenDead holds a loopback port for the dead backend and resets every
// connection to it the moment it is accepted: a probe gets no answer, only
// a transport error, as from a backend whose process is gone. The port
// stays held while the demo runs, because a port listened on and closed is
// free for anyone, and another server could take it and answer in the
// dead backend's place. stop closes the port.
func listenDead() (url string, stop func() error, err error) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return "", nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.AcceptTCP()
			if err != nil {
				return
			}
			// No lingering: the close sends a reset, as a port nobody
			// listens on does, rather than an orderly end of the stream.
			conn.SetLinger(0)
			conn.Close()
		}
	})
	return "http://" + ln.Addr().String(), func() error {
		err := ln.Close()
		wg.Wait()
		return err
	}, nil
}
