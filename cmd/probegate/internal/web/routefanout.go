package web

import (
	"net/http"
	"strings"

	"github.com/probegate/probegate/collector/fanout"
)

// RouteFanout sends every request for fanout.Path or a path under it to
// fan, and every other request to mux. The fan-out must see its
// requests before the mux does: the mux answers /fanout, and paths it
// would clean (a//b, a/../b), with a redirect that carries no X-Backends,
// and the fan-out refuses the paths that must not reach a backend itself.
func RouteFanout(fan, mux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == fanout.Path || strings.HasPrefix(p, fanout.Path+"/") {
			fan.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
