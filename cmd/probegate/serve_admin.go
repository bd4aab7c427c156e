package main

import (
	"errors"
	"net"
	"net/http"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
)

// serveWithAdmin runs serveMain and, when the admin listener is on,
// serveAdmin beside it. It returns serveMain's result, or serveAdmin's
// error at once when the admin listener fails on its own (an unreadable
// TLS certificate): probegate then stops rather than run without the
// interface its operators expect.
func serveWithAdmin(logger log.Logger, admin *http.Server, adminListener net.Listener, serveMain, serveAdmin func() error) error {
	if admin == nil {
		return serveMain()
	}
	level.Info(logger).Log("msg", "Serving the admin API and /-/reload", "address", adminListener.Addr())
	mainDone, adminDone := make(chan error, 1), make(chan error, 1)
	go func() { mainDone <- serveMain() }()
	go func() { adminDone <- serveAdmin() }()
	select {
	case err := <-mainDone:
		return err
	case err := <-adminDone:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return <-mainDone
	}
}
