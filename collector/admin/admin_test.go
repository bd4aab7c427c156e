package admin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/probegate/probegate/internal/jsonanswer"
)

// TestGuard: each refusal of the guard, for the admin API and the
// lifecycle alike, is a JSON error saying why; an admitted request
// reaches the route.
func TestGuard(t *testing.T) {
	reached := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	on := Guard{EnableAdminAPI: true, EnableLifecycle: true}
	loopbackOnly := on
	loopbackOnly.LoopbackOnly = true
	throughSelf := on
	throughSelf.Forwarded = func(r *http.Request) bool { return r.Header.Get("Via") == "1.1 self" }
	named := on
	named.ListenAddress = "Admin.Internal.:9799"
	cases := []struct {
		name   string
		guard  Guard
		remote string
		host   string
		header string
		code   int
		says   string
	}{
		{name: "disabled", guard: Guard{}, code: http.StatusForbidden, says: "--web.enable-"},
		{name: "enabled", guard: on, code: http.StatusTeapot},
		{name: "loopback only, from loopback", guard: loopbackOnly, remote: "[::1]:5000", code: http.StatusTeapot},
		{name: "loopback only, from IPv4-mapped loopback", guard: loopbackOnly, remote: "[::ffff:127.0.0.1]:5000", code: http.StatusTeapot},
		{name: "loopback only, from elsewhere", guard: loopbackOnly, remote: "10.1.2.3:5000", code: http.StatusForbidden, says: "loopback clients only"},
		{name: "through its own fan-out", guard: throughSelf, header: "1.1 self", code: http.StatusForbidden, says: "own fan-out"},
		{name: "through another hop", guard: throughSelf, header: "1.1 other", code: http.StatusTeapot},
		{name: "an IP address", guard: on, host: "10.0.0.7:9799", code: http.StatusTeapot},
		{name: "an IPv6 address", guard: on, host: "[::1]:9799", code: http.StatusTeapot},
		{name: "an IP address without a port", guard: on, host: "127.0.0.1", code: http.StatusTeapot},
		{name: "localhost", guard: on, host: "LOCALHOST.:9799", code: http.StatusTeapot},
		{name: "a foreign name", guard: on, host: "evil.example:9799", code: http.StatusMisdirectedRequest, says: "Host was"},
		{name: "localhost's subdomain", guard: on, host: "localhost.evil.example", code: http.StatusMisdirectedRequest, says: "Host was"},
		{name: "a name that looks like an address", guard: on, host: "127.0.0.1.nip.io:9799", code: http.StatusMisdirectedRequest, says: "Host was"},
		{name: "no Host", guard: on, host: " ", code: http.StatusMisdirectedRequest, says: "Host was"},
		{name: "its own name", guard: named, host: "admin.internal:9799", code: http.StatusTeapot},
		{name: "another name", guard: named, host: "other.internal:9799", code: http.StatusMisdirectedRequest, says: "admin.internal"},
		{name: "a foreign name before anything else", guard: Guard{LoopbackOnly: true, Forwarded: throughSelf.Forwarded}, remote: "10.1.2.3:5000",
			host: "evil.example", header: "1.1 self", code: http.StatusMisdirectedRequest, says: "Host was"},
	}
	for _, tc := range cases {
		for _, route := range []struct {
			name string
			wrap func(http.Handler) http.Handler
			flag string
		}{{"admin API", tc.guard.AdminAPI, "--web.enable-admin-api"}, {"lifecycle", tc.guard.Lifecycle, "--web.enable-lifecycle"}} {
			t.Run(tc.name+", "+route.name, func(t *testing.T) {
				req := httptest.NewRequest(http.MethodGet, "/api/v1/backends", nil)
				req.Host = "127.0.0.1:9799"
				if tc.host != "" {
					req.Host = strings.TrimSpace(tc.host)
				}
				if tc.remote != "" {
					req.RemoteAddr = tc.remote
				}
				if tc.header != "" {
					req.Header.Set("Via", tc.header)
				}
				says := tc.says
				if says == "--web.enable-" {
					says = route.flag
				}
				rec := httptest.NewRecorder()
				route.wrap(reached).ServeHTTP(rec, req)
				if rec.Code != tc.code || !strings.Contains(rec.Body.String(), says) {
					t.Errorf("status %d %q, want %d saying %q", rec.Code, rec.Body.String(), tc.code, says)
				}
				if tc.code == http.StatusTeapot {
					return
				}
				var e jsonanswer.Error
				if rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &e) != nil || !strings.Contains(e.Error, says) {
					t.Errorf("a refusal of type %q and body %q, want a JSON error saying %q", rec.Header().Get("Content-Type"), rec.Body.String(), says)
				}
			})
		}
	}
}

// TestClientIP: the client's address is RemoteAddr without its port, an
// IPv4-mapped address as IPv4, and no address when RemoteAddr is none.
func TestClientIP(t *testing.T) {
	for remote, want := range map[string]string{
		"127.0.0.1:5000":         "127.0.0.1",
		"[::1]:5000":             "::1",
		"[::ffff:10.1.2.3]:5000": "10.1.2.3",
		"10.1.2.3":               "",
		"@":                      "",
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = remote
		ip, ok := ClientIP(req)
		if got := ip.String(); (want == "" && ok) || (want != "" && (!ok || got != want)) {
			t.Errorf("ClientIP(%q) = %s, %v; want %q", remote, got, ok, want)
		}
	}
}
