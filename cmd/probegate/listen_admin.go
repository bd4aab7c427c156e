package main

import (
	"net/http"
	"time"

	"github.com/probegate/probegate/collector/admin"
	"github.com/probegate/probegate/collector/fanout"
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

// adminGuard is the one guard every route of the admin listener passes:
// the flags that enable its features, the demo's loopback-only rule, the
// listener's host name, and this replica's own fan-out, whose requests
// every backend sees with this replica's Via entry (a backend address
// that leads here anyway, a name only DNS knows is this host or a port
// forward, must not let a fan-out client take backends out of service).
func (o *options) adminGuard() admin.Guard {
	replica := o.replicaName()
	return admin.Guard{EnableAdminAPI: o.EnableAdminAPI, EnableLifecycle: o.EnableLifecycle, LoopbackOnly: o.adminLoopbackOnly,
		ListenAddress: o.AdminListenAddress, Forwarded: func(r *http.Request) bool { return fanout.ThroughReplica(r, replica) }}
}

// adminServer is the server of --web.admin-listen-address, serving
// handler, whose routes each pass adminGuard, on the admin listener.
func (o *options) adminServer(handler http.Handler) *http.Server {
	readTimeout := time.Duration(o.ReadTimeout)
	return &http.Server{
		Handler:           framing.Handler(handler),
		ConnContext:       framing.ConnContext,
		ReadHeaderTimeout: min(time.Duration(o.ReadHeaderTimeout), readTimeout),
		ReadTimeout:       readTimeout,
		IdleTimeout:       readTimeout,
		MaxHeaderBytes:    serverMaxHeaderBytes(o.MaxHeaderBytes),
	}
}
