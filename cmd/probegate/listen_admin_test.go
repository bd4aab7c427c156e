package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// adminTestServer is the admin server of a replica named gate-a on
// 127.0.0.1:9799, in front of a handler that answers 200.
func adminTestServer() *http.Server {
	o := &options{ReplicaName: "gate-a", ReadTimeout: model.Duration(time.Minute)}
	o.AdminListenAddress, o.MaxHeaderBytes = "127.0.0.1:9799", 16<<10
	return o.adminServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
}

// TestAdminRefusesItsOwnFanout: a request that carries this replica's
// Via entry, as every request its fan-out forwards does, is refused 403
// by the admin listener; one through another replica, or none, is served.
func TestAdminRefusesItsOwnFanout(t *testing.T) {
	srv := adminTestServer()
	for via, want := range map[string]int{
		"":                                   http.StatusOK,
		"1.1 gate-b (probegate)":             http.StatusOK,
		"1.1 gate-a (probegate)":             http.StatusForbidden,
		"1.0 lb, 1.1 gate-a (probegate)":     http.StatusForbidden,
		"1.1 gate-b (probegate), 1.1 gate-a": http.StatusForbidden,
	} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9799/api/v1/backends/a/maintenance", nil)
		if via != "" {
			r.Header.Set("Via", via)
		}
		w := httptest.NewRecorder()
		srv.Handler.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Via %q: status %d; want %d", via, w.Code, want)
		}
	}
}

// TestAdminRefusesForeignHosts: the admin listener serves a request for
// an IP address, localhost or its own listen address's name, and answers
// 421 to any other Host, as a DNS-rebound page's requests carry.
func TestAdminRefusesForeignHosts(t *testing.T) {
	srv := adminTestServer()
	named := &options{ReplicaName: "gate-a", ReadTimeout: model.Duration(time.Minute)}
	named.AdminListenAddress = "Admin.Internal.:9799"
	for _, c := range []struct {
		srv  *http.Server
		host string
		want int
	}{
		{srv, "127.0.0.1:9799", http.StatusOK},
		{srv, "127.0.0.1", http.StatusOK},
		{srv, "[::1]:9799", http.StatusOK},
		{srv, "10.0.0.7:9799", http.StatusOK},
		{srv, "localhost:9799", http.StatusOK},
		{srv, "LOCALHOST.:9799", http.StatusOK},
		{srv, "evil.example:9799", http.StatusMisdirectedRequest},
		{srv, "localhost.evil.example", http.StatusMisdirectedRequest},
		{srv, "127.0.0.1.nip.io:9799", http.StatusMisdirectedRequest},
		{srv, "", http.StatusMisdirectedRequest},
		{named.adminServer(http.NotFoundHandler()), "admin.internal:9799", http.StatusNotFound},
		{named.adminServer(http.NotFoundHandler()), "other.internal:9799", http.StatusMisdirectedRequest},
	} {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/backends/a/maintenance", nil)
		r.Host = c.host
		w := httptest.NewRecorder()
		c.srv.Handler.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("Host %q: status %d; want %d", c.host, w.Code, c.want)
		}
	}
}
