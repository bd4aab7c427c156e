package main

import (
	"net/http"

	"github.com/probegate/probegate/collector/admin"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/probe"
)

// mountDebugProbe serves the debug probe of a backend, part of the admin
// API: 403 unless --web.enable-admin-api is given, and to loopback
// clients only in the demo.
func mountDebugProbe(mux *http.ServeMux, opts *options, p *pool.Pool) {
	guard := admin.Guard{Enabled: opts.EnableAdminAPI, LoopbackOnly: opts.adminLoopbackOnly}
	mux.Handle(probe.DebugPattern, guard.Wrap(probe.DebugHandler(probe.DebugOptions{Pool: p})))
}
