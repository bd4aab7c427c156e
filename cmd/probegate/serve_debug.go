package main

import (
	"net/http"

	"github.com/probegate/probegate/collector/admin"
	"github.com/probegate/probegate/collector/debugprobe"
	"github.com/probegate/probegate/collector/pool"
)

// mountDebugProbe serves the debug probe of a backend, part of the admin
// API: 403 unless --web.enable-admin-api is given, and to loopback
// clients only in the demo.
func mountDebugProbe(mux *http.ServeMux, opts *options, p *pool.Pool) {
	guard := admin.Guard{Enabled: opts.EnableAdminAPI, LoopbackOnly: opts.adminLoopbackOnly}
	mux.Handle(debugprobe.Pattern, guard.Wrap(debugprobe.Handler(debugprobe.Options{Pool: p})))
}
