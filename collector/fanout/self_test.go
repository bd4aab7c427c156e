package fanout

import (
	"net"
	"net/netip"
	"testing"
)

// TestSelfTargets: a URL on one of probegate's own listeners, by address
// or by a name of this host, is recognised whatever its path.
func TestSelfTargets(t *testing.T) {
	listeners := []net.Addr{
		&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 9797},
		&net.TCPAddr{IP: net.IPv6unspecified, Port: 9000},
	}
	self := NewSelf(listeners, []netip.Addr{netip.MustParseAddr("192.0.2.10")}, []string{"Gate-1.example."})
	for url, want := range map[string]bool{
		"http://127.0.0.1:9797/fanout":       true,
		"http://127.0.0.1:9797/fanout/":      true,
		"http://127.0.0.1:9797/fanout/api/x": true,
		"http://127.0.0.1:9797/./fanout":     true,
		"https://127.0.0.1:9797/fanout":      true,
		"http://LOCALHOST:9797/fanout":       true,
		"http://app.localhost:9797/fanout":   true,
		// Any path: the root reaches the admin API or the landing page,
		// and each probe or round asks probegate itself.
		"http://127.0.0.1:9797/fanoutx":         true,
		"http://127.0.0.1:9797":                 true,
		"http://127.0.0.1:9797/":                true,
		"http://127.0.0.1:9797/api/v1/backends": true,
		"http://127.0.0.2:9797/fanout":          false,
		"http://127.0.0.1:9798/fanout":          false,
		"http://[::ffff:127.0.0.1]:9797/fanout": true,
		// The listener on every address accepts on every local one.
		"http://192.0.2.10:9000/fanout":     true,
		"http://127.0.0.5:9000/fanout":      true,
		"http://[::1]:9000/fanout/x":        true,
		"http://gate-1.example:9000/fanout": true,
		"http://192.0.2.11:9000/fanout":     false,
		"http://elsewhere:9000/fanout":      false,
		"http://192.0.2.10:80/fanout":       false,
		"not a url at all":                  false,
		// A dial to the unspecified address reaches loopback, so it
		// reaches the listener on 127.0.0.1 and every local one.
		"http://0.0.0.0:9797/api/v1/backends": true,
		"http://[::]:9797/fanout":             true,
		"http://0.0.0.0:9000/fanout":          true,
		"http://0.0.0.0:9798/fanout":          false,
	} {
		if got := self.Targets(url); got != want {
			t.Errorf("Targets(%q) = %v; want %v", url, got, want)
		}
	}
	if (*Self)(nil).Targets("http://127.0.0.1:9797/fanout") {
		t.Error("a nil Self recognised a URL")
	}
	port80 := NewSelf([]net.Addr{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 80}}, nil, nil)
	if !port80.Targets("http://127.0.0.1/fanout") || port80.Targets("https://127.0.0.1/fanout") {
		t.Error("the scheme's default port is not the one compared")
	}
}
