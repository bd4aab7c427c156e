package main

import (
	"net/http"
	"time"

	"github.com/probegate/probegate/cmd/probegate/internal/web"
	"github.com/probegate/probegate/internal/framing"
)

// adminMaxConnections bounds the admin listener. Operators and their
// tools use a handful of connections; the bound keeps a client of the
// admin listener from costing what the main listener needs.
const adminMaxConnections = 64

// The admin interface has a listener of its own, as HAProxy's stats
// socket and Envoy's admin port have: whatever reaches the main listener
// (clients of the fan-out, a browser running a page some backend
// relayed) cannot reach the admin API, which can take backends out of
// service and reload the configuration. The admin listener is on
// loopback unless the operator opens it wider, and sits behind the same
// web configuration (TLS, basic auth) as the main listener.

// adminServer is the server of --web.admin-listen-address, serving
// handler on the admin listener.
func (o *options) adminServer(handler http.Handler) *http.Server {
	readTimeout := time.Duration(o.ReadTimeout)
	return &http.Server{
		Handler:           framing.Handler(web.RefuseForeignHosts(web.RefuseOwnHops(handler, o.replicaName()), o.AdminListenAddress)),
		ConnContext:       framing.ConnContext,
		ReadHeaderTimeout: min(time.Duration(o.ReadHeaderTimeout), readTimeout),
		ReadTimeout:       readTimeout,
		IdleTimeout:       readTimeout,
		MaxHeaderBytes:    serverMaxHeaderBytes(o.MaxHeaderBytes),
	}
}
