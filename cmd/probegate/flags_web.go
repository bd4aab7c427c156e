package main

import (
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/cmd/probegate/internal/flagconfig"
)

// defaultAdminListenAddress keeps the admin interface on loopback unless
// the operator opens it: nothing that reaches the main listener, a page a
// browser loaded from it included, can reach the admin API.
const defaultAdminListenAddress = "127.0.0.1:9799"

// webLimits are the flags of the admin listener and of the bounds every
// listener puts on a request.
type webLimits struct {
	// AdminListenAddress serves the admin API, /-/reload and
	// /api/v1/replicas, behind the same web configuration as the main
	// listener; empty is off. It is listened on only when one of those is
	// enabled (adminAddress).
	AdminListenAddress string
	// MaxHeaderBytes bounds a request's head on every listener.
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds reading a request's head on every listener.
	ReadHeaderTimeout model.Duration
	// MaxRequestsInFlight bounds how many requests each heavy page
	// (metrics, /healthz, /status pages, /api/v1/) serves at once.
	MaxRequestsInFlight int
}

// webLimitFlags registers the admin listener, which check-config reads as
// well (a backend on it is probegate itself), and the request bounds,
// which only a running server reads.
func (o *options) webLimitFlags(app, serveOnly flagconfig.Adder) {
	app.Flag("web.admin-listen-address", "Address of the admin listener, the only one serving the admin API, /-/reload and /api/v1/replicas, behind --web.config.file like the main listener; opened only with --web.enable-admin-api or --web.enable-lifecycle. Empty: off.").
		Envar(flagconfig.Envar("web.admin-listen-address")).Default(defaultAdminListenAddress).StringVar(&o.AdminListenAddress)
	flagconfig.NewValue(&o.MaxHeaderBytes, flagconfig.Size).Register(serveOnly, "web.max-header-bytes",
		"Largest request head any listener reads; a larger one gets 431.").Default("64KiB")
	flagconfig.NewValue(&o.ReadHeaderTimeout, flagconfig.Duration).Register(serveOnly, "web.read-header-timeout",
		"Maximum duration any listener waits for a request's head.").Default("10s")
	flagconfig.NewValue(&o.MaxRequestsInFlight, flagconfig.Count).Register(serveOnly, "web.max-requests-in-flight",
		"Most requests each of the metrics, /healthz, /status and /api/v1/ endpoints serves at once; more get 503.").Default("4")
}

// netHTTPHeaderSlack is what net/http reads of a request head beyond an
// http.Server's MaxHeaderBytes (its read buffer's worth).
const netHTTPHeaderSlack = 4096

// serverMaxHeaderBytes is the http.Server MaxHeaderBytes under which
// net/http answers 431 to a head of more than limit bytes, request line
// and blank line included. A limit of 4 KiB or less cannot be met (net/http
// reads its buffer's worth whatever the setting, and takes 0 for its 1 MiB
// default), so every head of up to 4 KiB and one byte is read.
func serverMaxHeaderBytes(limit int) int {
	return max(limit-netHTTPHeaderSlack, 1)
}
