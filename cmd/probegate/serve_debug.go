package main

import (
	"net/http"

	"github.com/probegate/probegate/collector/admin"
	"github.com/probegate/probegate/collector/debugprobe"
	"github.com/probegate/probegate/collector/pool"
)

// mountDebugProbe serves the debug probe of a backend, part of the admin
// API, behind the admin listener's guard: 403 unless
// --web.enable-admin-api is given, and to loopback clients only in the
// demo.
func mountDebugProbe(mux *http.ServeMux, guard admin.Guard, p *pool.Pool) {
	mux.Handle(debugprobe.Pattern, guard.AdminAPI(debugprobe.Handler(debugprobe.Options{Pool: p})))
}
