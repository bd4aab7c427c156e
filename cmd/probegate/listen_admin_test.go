package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/debugprobe"
	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/readiness"
)

// adminTestHandler is the handler of the admin listener of a replica
// named gate-a on 127.0.0.1:9799 with one backend, a, and the flags in
// args, as a running probegate serves it; loopbackOnly serves loopback
// clients alone, as the demo does.
func adminTestHandler(t *testing.T, loopbackOnly bool, args ...string) http.Handler {
	t.Helper()
	isolateEnv(t)
	o := parsed(t, append([]string{"--backend=a=http://127.0.0.1:1", "--storage.path=" + t.TempDir(), "--replica.name=gate-a",
		"--web.admin-listen-address=127.0.0.1:9799"}, args...)...)
	o.adminLoopbackOnly = loopbackOnly
	cfg, _, err := o.judge(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := pool.New(log.NewNopLogger(), time.Now)
	if err := p.Apply(discovery.Static(cfg), pool.SettingsOf(cfg)); err != nil {
		t.Fatal(err)
	}
	maint, err := readiness.Open(cfg.Maintenance, p, readiness.Options{Replica: "gate-a", StorageDir: o.storageDir(),
		AdminAPI: o.EnableAdminAPI, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{opts: o, logger: log.NewNopLogger(), pool: p, maint: maint}
	mux, err := s.adminMux(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o.adminServer(mux).Handler
}

// adminPaths are a concrete path of every route the admin listener
// serves: adminRoutes, a subtree's routes under it included, and the
// debug probe.
func adminPaths() []string {
	var paths []string
	for _, route := range adminRoutes() {
		if strings.HasSuffix(route, "/") {
			paths = append(paths, maintenance.MaintenancePath("a"), strings.Replace(debugprobe.Pattern, "{name}", "a", 1))
			continue
		}
		paths = append(paths, route)
	}
	return paths
}

// TestEveryAdminRoutePassesTheGuard: every route of the admin listener,
// /-/reload as much as the admin API, refuses a request for a foreign
// host (421), one through this replica's own fan-out (403), one from
// outside loopback where the demo allows only loopback (403), and one for
// a feature that is off, naming the flag that enables it (403).
func TestEveryAdminRoutePassesTheGuard(t *testing.T) {
	demo := adminTestHandler(t, true, "--web.enable-admin-api", "--web.enable-lifecycle")
	off := adminTestHandler(t, false)
	for _, path := range adminPaths() {
		flag := "--web.enable-admin-api"
		if path == "/-/reload" {
			flag = "--web.enable-lifecycle"
		}
		for _, c := range []struct {
			name, host, via, remote string
			handler                 http.Handler
			code                    int
			says                    string
		}{
			{name: "a foreign host", host: "evil.example:9799", code: http.StatusMisdirectedRequest, says: "Host was"},
			{name: "its own fan-out", via: "1.0 lb, 1.1 gate-a (probegate)", code: http.StatusForbidden, says: "own fan-out"},
			{name: "off loopback in the demo", remote: "192.0.2.7:4242", code: http.StatusForbidden, says: "loopback clients only"},
			{name: "a feature that is off", handler: off, code: http.StatusForbidden, says: flag},
		} {
			r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9799"+path, strings.NewReader(`{"reason":"x"}`))
			r.RemoteAddr = "127.0.0.1:4242"
			if c.host != "" {
				r.Host = c.host
			}
			if c.via != "" {
				r.Header.Set("Via", c.via)
			}
			if c.remote != "" {
				r.RemoteAddr = c.remote
			}
			h := c.handler
			if h == nil {
				h = demo
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.code || !strings.Contains(w.Body.String(), c.says) {
				t.Errorf("POST %s, %s: %d %q; want %d saying %q", path, c.name, w.Code, w.Body.String(), c.code, c.says)
			}
		}
	}
}

// TestAdminListenerOnlyWhenServed: the admin listener is opened only when
// --web.enable-admin-api or --web.enable-lifecycle serves something
// there, so that a second probegate on the host starts without a flag
// while another process holds the admin port; check-config judges a
// backend at that address a loop only then.
func TestAdminListenerOnlyWhenServed(t *testing.T) {
	isolateEnv(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	admin := "--web.admin-listen-address=" + taken.Addr().String()
	for _, c := range []struct {
		flags  []string
		served bool
	}{
		{nil, false},
		{[]string{"--web.enable-admin-api"}, true},
		{[]string{"--web.enable-lifecycle"}, true},
	} {
		o := parsed(t, append([]string{"--web.listen-address=127.0.0.1:0", admin}, c.flags...)...)
		ls, err := o.openListeners()
		switch {
		case c.served && (err == nil || !strings.Contains(err.Error(), "--web.admin-listen-address="+taken.Addr().String())):
			t.Errorf("%v: opened %v, err %v; want the admin listener opened, and the taken port named", c.flags, ls.admin, err)
		case !c.served && (err != nil || ls.admin != nil):
			t.Errorf("%v: opened %v, err %v; want no admin listener", c.flags, ls.admin, err)
		}
		if err == nil {
			ls.close()
		}
		addrs, err := o.flagListenAddrs()
		if err != nil {
			t.Fatal(err)
		}
		if got := len(addrs) == 2; got != c.served {
			t.Errorf("%v: check-config judges with %v; want the admin address among them: %v", c.flags, addrs, c.served)
		}
	}
}

// fixedAddrListener is a net.Listener that only tells its address.
type fixedAddrListener struct {
	net.Listener
	addr net.Addr
}

func (l fixedAddrListener) Addr() net.Addr { return l.addr }

// TestAdminListenerWarnsBeyondLoopback: an admin listener that clients
// beyond loopback can reach, without a web configuration that makes them
// authenticate, is warned of at start, naming its address; on loopback,
// behind basic auth or verified client certificates, or in the demo, it
// is not.
func TestAdminListenerWarnsBeyondLoopback(t *testing.T) {
	basicAuth := writeFile(t, "basic_auth_users:\n  op: $2y$10$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze\n")
	tlsOnly := writeFile(t, "tls_server_config:\n  cert_file: x.crt\n  key_file: x.key\n")
	clientCerts := writeFile(t, "tls_server_config:\n  cert_file: x.crt\n  key_file: x.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n")
	everywhere := &net.TCPAddr{IP: net.IPv6unspecified, Port: 9799}
	lan := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 9799}
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9799}
	for _, c := range []struct {
		addr      net.Addr
		webConfig string
		demo      bool
		warns     bool
	}{
		{everywhere, "", false, true},
		{lan, "", false, true},
		{lan, tlsOnly, false, true},
		{lan, basicAuth, false, false},
		{lan, clientCerts, false, false},
		{loopback, "", false, false},
		{lan, "", true, false},
	} {
		o := &options{WebConfigFile: c.webConfig, adminLoopbackOnly: c.demo}
		var logs bytes.Buffer
		if err := o.logAdminListener(log.NewLogfmtLogger(&logs), fixedAddrListener{addr: c.addr}); err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(logs.String(), "level=warn") && strings.Contains(logs.String(), "address="+c.addr.String())
		if warned != c.warns {
			t.Errorf("admin listener on %s, web config %q, demo %v: logged %q; want a warning naming the address: %v", c.addr, c.webConfig, c.demo, logs.String(), c.warns)
		}
	}
}
