package main

import (
	"net"
	"net/http"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

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

// adminAddress is the address the admin listener is opened on: the
// --web.admin-listen-address, only when something is served there, and
// empty otherwise. What the listener serves is the admin API (the
// maintenance API, the replica views, which need a shared store too, and
// the debug probe) with --web.enable-admin-api, and /-/reload with
// --web.enable-lifecycle; without either, every route would answer 403,
// and a second probegate on the host (a second pool) could not start
// for a port it does not use. The decision rests on flags alone, which
// no reload changes, so the listener opened at start is the one the
// process keeps: a reload can neither need one that was not opened nor
// make one useless.
func (o *options) adminAddress() string {
	if !o.EnableAdminAPI && !o.EnableLifecycle {
		return ""
	}
	return o.AdminListenAddress
}

// logAdminListener says at start where the admin interface is, or why
// there is none, and warns when it is open beyond loopback to clients
// the web configuration does not authenticate: anyone who reaches it
// could then take backends out of service and reload the configuration,
// as Prometheus warns of its own admin APIs. The demo, which admits
// loopback clients alone, needs no warning.
func (o *options) logAdminListener(logger log.Logger, admin net.Listener) error {
	if admin == nil {
		if o.AdminListenAddress != "" {
			level.Info(logger).Log("msg", "No admin listener: nothing is served there without --web.enable-admin-api or --web.enable-lifecycle",
				"address", o.AdminListenAddress)
		}
		return nil
	}
	authenticated, err := webConfigVerifiesClients(o.WebConfigFile)
	if err != nil {
		return err
	}
	if tcp, ok := admin.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && !authenticated && !o.adminLoopbackOnly {
		level.Warn(logger).Log("msg", "The admin listener is reachable beyond loopback and --web.config.file authenticates no client: "+
			"anyone who can connect can take backends out of service and reload the configuration",
			"address", admin.Addr(), "hint", "set basic_auth_users or a client_auth_type of RequireAndVerifyClientCert in --web.config.file, or listen on loopback")
	}
	return nil
}

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
