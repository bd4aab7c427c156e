package fanout

import (
	"net"
	"net/netip"
	"testing"
)

// TestFleetTakesAPeersListenerForALoop: a URL at a peer's listener is a
// loop for this replica too, once the peer's published addresses are
// read back; a URL at neither is not, and a peer's entries that do not
// parse recognise nothing.
func TestFleetTakesAPeersListenerForALoop(t *testing.T) {
	self := NewSelf([]net.Addr{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 9797}}, nil, []string{"gate-1"})
	peer := NewSelf([]net.Addr{&net.TCPAddr{IP: net.IPv6unspecified, Port: 9000}, &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 9798}},
		[]netip.Addr{netip.MustParseAddr("192.0.2.20")}, []string{"Gate-2.example."})
	fleet := NewFleet(self)
	urls := map[string]bool{
		"http://127.0.0.1:9797/fanout":      true, // self
		"http://127.0.0.1:9798/":            true, // the peer's listener on loopback
		"http://192.0.2.20:9000/fanout":     true, // the peer's host, its listener on every address
		"http://gate-2.example:9000/x":      true, // the peer's name
		"http://192.0.2.21:9000/fanout":     false,
		"http://gate-2.example:9001/fanout": false,
		"http://127.0.0.1:9799/":            false,
	}
	for url := range urls {
		if self := url == "http://127.0.0.1:9797/fanout"; fleet.Targets(url) != self {
			t.Errorf("before the peers are known, Targets(%q) = %v; want %v", url, !self, self)
		}
	}
	fleet.SetPeers([]*Self{SelfOf(peer.Addresses()), SelfOf([]string{"nonsense", ":x"}, []string{"also nonsense"}, []string{""})})
	for url, want := range urls {
		if got := fleet.Targets(url); got != want {
			t.Errorf("Targets(%q) = %v; want %v", url, got, want)
		}
	}
	fleet.SetPeers(nil)
	if fleet.Targets("http://127.0.0.1:9798/") {
		t.Error("a peer gone is still taken for a loop")
	}
}

// TestSelfAddressesReadBack: what a Self publishes reads back as a Self
// that recognises the same URLs.
func TestSelfAddressesReadBack(t *testing.T) {
	self := NewSelf([]net.Addr{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 9797}, &net.TCPAddr{IP: net.IPv6unspecified, Port: 9000}},
		[]netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::1")}, []string{"Gate-1.example."})
	back := SelfOf(self.Addresses())
	for _, url := range []string{"http://127.0.0.1:9797/fanout", "http://[2001:db8::1]:9000/", "http://192.0.2.10:9000/", "http://gate-1.example:9000/",
		"http://localhost:9797/", "http://127.0.0.2:9797/", "http://[::1]:9000/", "http://192.0.2.11:9000/", "http://0.0.0.0:9797/"} {
		if got, want := back.Targets(url), self.Targets(url); got != want {
			t.Errorf("read back, Targets(%q) = %v; the original says %v", url, got, want)
		}
	}
}
