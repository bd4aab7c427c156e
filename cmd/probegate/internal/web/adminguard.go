package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/internal/jsonanswer"
)

// RefuseOwnHops answers 403 to a request the fan-out of replica forwarded:
// the admin listener is never a backend, and a backend address that leads
// to it anyway (a name only DNS knows is this host, a port forward) must
// not let a fan-out client take backends out of service. Every backend
// request carries this replica's Via entry.
func RefuseOwnHops(next http.Handler, replica string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fanout.ThroughReplica(r, replica) {
			jsonanswer.WriteError(w, r, http.StatusForbidden, "the request came through this probegate's own fan-out ("+replica+"): the admin listener is never a backend")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// RefuseForeignHosts answers 421 to a request whose Host is not an IP
// address, localhost, or the host name of listenAddr, the admin listen
// address. A web page can make a browser send requests to a name of its
// own that DNS then points at 127.0.0.1 (DNS rebinding): the browser
// takes them for the page's origin, so no cross-origin check stops them,
// but their Host is the page's name, which is none of these.
func RefuseForeignHosts(next http.Handler, listenAddr string) http.Handler {
	own, _, err := net.SplitHostPort(listenAddr)
	if err != nil {
		own = listenAddr
	}
	own = normalHostName(own)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host // No port.
		}
		host = normalHostName(strings.Trim(host, "[]"))
		if _, err := netip.ParseAddr(host); err != nil && host != "localhost" && (own == "" || host != own) {
			jsonanswer.WriteError(w, r, http.StatusMisdirectedRequest, fmt.Sprintf("the admin listener answers only requests for an IP address, localhost or %q; Host was %q", own, r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// normalHostName is a host name as names compare: lower case, without
// the root's trailing dot.
func normalHostName(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}
