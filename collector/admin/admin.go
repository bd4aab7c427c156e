// Package admin is what every endpoint of probegate's admin API shares:
// the guard that answers 403 unless the operator enabled the API with
// --web.enable-admin-api (and, where probegate asks for it, to clients
// not on loopback), and the client's address. Its answers, errors
// included, are written by internal/jsonanswer, whose Error the CLI
// decodes. The endpoints themselves live with what they act on
// (collector/maintenance, the debug probe).
package admin

import (
	"net"
	"net/http"
	"net/netip"

	"github.com/probegate/probegate/internal/jsonanswer"
)

// Guard is what the admin API admits.
type Guard struct {
	// Enabled is --web.enable-admin-api.
	Enabled bool
	// LoopbackOnly refuses clients that do not connect from a loopback
	// address (the demo, which enables the API on any address).
	LoopbackOnly bool
}

// Wrap answers 403, saying why and how to change it, to every request the
// guard does not admit, and passes the others to h.
func (g Guard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.Enabled {
			jsonanswer.WriteError(w, r, http.StatusForbidden, "the admin API is disabled; start probegate with --web.enable-admin-api to enable it")
			return
		}
		if g.LoopbackOnly && !fromLoopback(r) {
			jsonanswer.WriteError(w, r, http.StatusForbidden, "the admin API answers loopback clients only here")
			return
		}
		h.ServeHTTP(w, r)
	})
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
