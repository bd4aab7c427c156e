// Package admin is what every route of probegate's admin listener shares:
// the one guard each of them passes (Guard), and the client's address.
// The guard refuses a request that names a host other than the
// listener's, one that probegate's own fan-out forwarded, one from
// outside loopback where only loopback is served, and one for a feature
// the operator did not enable (--web.enable-admin-api,
// --web.enable-lifecycle). Its answers are written by internal/jsonanswer,
// whose Error the CLI decodes. The routes themselves live with what they
// act on (collector/maintenance, the debug probe, the reload in cmd).
package admin

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/probegate/probegate/internal/hostname"
	"github.com/probegate/probegate/internal/jsonanswer"
)

// Guard is what the admin listener admits. Its zero value admits nothing
// but requests for an IP address or localhost, and enables no feature.
type Guard struct {
	// EnableAdminAPI is --web.enable-admin-api: maintenance, the replica
	// views and the debug probe.
	EnableAdminAPI bool
	// EnableLifecycle is --web.enable-lifecycle: POST /-/reload.
	EnableLifecycle bool
	// LoopbackOnly refuses clients that do not connect from a loopback
	// address (the demo, which enables the admin API on any address).
	LoopbackOnly bool
	// ListenAddress is the admin listen address: a request's Host must be
	// an IP address, localhost, or this address's host name.
	ListenAddress string
	// Forwarded reports whether this replica's own fan-out forwarded the
	// request; nil when nothing can tell.
	Forwarded func(*http.Request) bool
}

// AdminAPI guards a route of the admin API: it answers 403 unless
// --web.enable-admin-api is given, besides what every route refuses.
func (g Guard) AdminAPI(h http.Handler) http.Handler {
	return g.wrap(g.EnableAdminAPI, "the admin API is disabled; start probegate with --web.enable-admin-api to enable it", h)
}

// Lifecycle guards POST /-/reload: it answers 403 unless
// --web.enable-lifecycle is given, besides what every route refuses.
func (g Guard) Lifecycle(h http.Handler) http.Handler {
	return g.wrap(g.EnableLifecycle, "lifecycle APIs are not enabled: start probegate with --web.enable-lifecycle, or send SIGHUP", h)
}

// wrap answers every request the guard does not admit, saying why, and
// passes the others to h. The checks go from the listener's to the
// feature's, so that a request that should never have arrived is told
// so before it learns which features are on.
func (g Guard) wrap(enabled bool, disabled string, h http.Handler) http.Handler {
	own := ownHostName(g.ListenAddress)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !admitsHost(r.Host, own):
			jsonanswer.WriteError(w, r, http.StatusMisdirectedRequest,
				fmt.Sprintf("the admin listener answers only requests for an IP address, localhost or %q; Host was %q", own, r.Host))
		case g.Forwarded != nil && g.Forwarded(r):
			jsonanswer.WriteError(w, r, http.StatusForbidden, "the request came through this probegate's own fan-out: the admin listener is never a backend")
		case g.LoopbackOnly && !fromLoopback(r):
			jsonanswer.WriteError(w, r, http.StatusForbidden, "the admin API answers loopback clients only here")
		case !enabled:
			jsonanswer.WriteError(w, r, http.StatusForbidden, disabled)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// admitsHost reports whether a request for host is for the admin
// listener: an IP address, localhost, or own, its listen address's host
// name. A web page can make a browser send requests to a name of its own
// that DNS then points at 127.0.0.1 (DNS rebinding): the browser takes
// them for the page's origin, so no cross-origin check stops them, but
// their Host is the page's name, which is none of these.
func admitsHost(host, own string) bool {
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		name = host // No port.
	}
	name = hostname.Normal(strings.Trim(name, "[]"))
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	return name == "localhost" || (own != "" && name == own)
}

// ownHostName is the host name of a listen address, as names compare.
func ownHostName(listenAddress string) string {
	own, _, err := net.SplitHostPort(listenAddress)
	if err != nil {
		own = listenAddress
	}
	return hostname.Normal(own)
}

// fromLoopback reports whether the client connects from a loopback address.
func fromLoopback(r *http.Request) bool {
	ip, ok := ClientIP(r)
	return ok && ip.IsLoopback()
}

// ClientIP is the address the request came from, without its port, an
// IPv4-mapped IPv6 address as IPv4; false when RemoteAddr is not an
// address.
func ClientIP(r *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(host)
	return ip.Unmap(), err == nil
}
