// Package admin is what every endpoint of probegate's admin API shares:
// the guard that answers 403 unless the operator enabled the API with
// --web.enable-admin-api (and, where probegate asks for it, to clients
// not on loopback), the client's address, and the JSON answers, errors
// included, that the endpoints and the CLI agree on. The endpoints
// themselves live with what they act on (collector/maintenance, the
// debug probe).
package admin

import (
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
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
			WriteError(w, http.StatusForbidden, "the admin API is disabled; start probegate with --web.enable-admin-api to enable it")
			return
		}
		if g.LoopbackOnly && !fromLoopback(r) {
			WriteError(w, http.StatusForbidden, "the admin API answers loopback clients only here")
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

// WriteJSON answers with v as indented JSON.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// Error is the body of every error answer of the admin API.
type Error struct {
	Error string `json:"error"`
}

// WriteError answers with {"error": msg}.
func WriteError(w http.ResponseWriter, code int, msg string) {
	WriteJSON(w, code, Error{Error: msg})
}
