package admin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/probegate/probegate/internal/jsonanswer"
)

func TestGuard(t *testing.T) {
	reached := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	cases := []struct {
		name   string
		guard  Guard
		remote string
		code   int
		says   string
	}{
		{"disabled", Guard{}, "127.0.0.1:5000", http.StatusForbidden, "--web.enable-admin-api"},
		{"enabled", Guard{Enabled: true}, "10.1.2.3:5000", http.StatusTeapot, ""},
		{"loopback only, from loopback", Guard{Enabled: true, LoopbackOnly: true}, "[::1]:5000", http.StatusTeapot, ""},
		{"loopback only, from IPv4-mapped loopback", Guard{Enabled: true, LoopbackOnly: true}, "[::ffff:127.0.0.1]:5000", http.StatusTeapot, ""},
		{"loopback only, from elsewhere", Guard{Enabled: true, LoopbackOnly: true}, "10.1.2.3:5000", http.StatusForbidden, "loopback clients only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/backends", nil)
			req.RemoteAddr = tc.remote
			rec := httptest.NewRecorder()
			tc.guard.Wrap(reached).ServeHTTP(rec, req)
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.says) {
				t.Errorf("status %d %q, want %d saying %q", rec.Code, rec.Body.String(), tc.code, tc.says)
			}
			if tc.code != http.StatusForbidden {
				return
			}
			var e jsonanswer.Error
			if rec.Header().Get("Content-Type") != "application/json" || json.Unmarshal(rec.Body.Bytes(), &e) != nil || !strings.Contains(e.Error, tc.says) {
				t.Errorf("a refusal of type %q and body %q, want a JSON error saying %q", rec.Header().Get("Content-Type"), rec.Body.String(), tc.says)
			}
		})
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
