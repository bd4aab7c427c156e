package main

import (
	"net/http"

	"github.com/probegate/probegate/collector/fanout"
)

// refuseOwnHops answers 403 to a request the fan-out of replica forwarded:
// the admin listener is never a backend, and a backend address that leads
// to it anyway (a name only DNS knows is this host, a port forward) must
// not let a fan-out client take backends out of service. Every backend
// request carries this replica's Via entry.
func refuseOwnHops(next http.Handler, replica string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fanout.ThroughReplica(r, replica) {
			writeJSONError(w, http.StatusForbidden, "the request came through this probegate's own fan-out ("+replica+"): the admin listener is never a backend")
			return
		}
		next.ServeHTTP(w, r)
	})
}
