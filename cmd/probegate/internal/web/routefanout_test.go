package web

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// TestRouteFanoutBypassesTheMux: every /fanout request reaches the fan-out
// handler with its path as sent, so it carries X-Backends, instead of the
// mux's redirect for /fanout or a path it would clean; every other request
// goes to the mux. The pool has no backends, so a round is a 502 (0/0),
// and a path with a ".." segment is the fan-out's own 400.
func TestRouteFanoutBypassesTheMux(t *testing.T) {
	fan := fanout.New(pool.New(log.NewNopLogger(), nil), config.Fanout{Enabled: true}, nil, log.NewNopLogger(), nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	handler := RouteFanout(fan, mux)
	for _, c := range []struct {
		target    string
		status    int
		xBackends string
	}{
		{"/fanout", http.StatusBadGateway, "0/0"},
		{"/fanout/", http.StatusBadGateway, "0/0"},
		{"/fanout/a//b", http.StatusBadGateway, "0/0"},
		{"/fanout/../x", http.StatusBadRequest, "0/0"},
		{"/fanout/a/%2e%2e/b", http.StatusBadRequest, "0/0"},
		{"/fanoutx", http.StatusTeapot, ""},
		{"/healthz", http.StatusTeapot, ""},
	} {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.target, nil))
		if rec.Code != c.status || rec.Header().Get("X-Backends") != c.xBackends {
			t.Errorf("GET %s: status %d, X-Backends %q, Location %q; want %d, %q",
				c.target, rec.Code, rec.Header().Get("X-Backends"), rec.Header().Get("Location"), c.status, c.xBackends)
		}
	}
}
