package fanout

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/probegate/probegate/internal/hostname"
)

// Self recognises a backend URL that points at one of probegate's own
// listeners (main, health, admin), whatever its path. Such a backend
// makes probegate a client of itself: under Path each round it is asked
// in comes back as a new round, which asks it again, and at any other
// path the probes and rounds reach probegate's own pages, its admin API
// among them. A static one is refused when the configuration is applied
// and a discovered one dropped.
// Via (loop.go) stops any loop Self cannot see, such as one through a host
// name that only DNS knows is this host, at its first repeated hop.
//
// Self is pure: the addresses it compares with are given, and it resolves
// no name. A nil *Self recognises nothing.
type Self struct {
	listeners []netip.AddrPort
	// local are this host's addresses, which a listener on an unspecified
	// address (":9797") accepts on.
	local []netip.Addr
	// names are the host names that mean this host.
	names []string
}

// NewSelf returns the predicate for probegate listening on listeners,
// on a host with the addresses local and the names hostnames (localhost
// is always one).
func NewSelf(listeners []net.Addr, local []netip.Addr, hostnames []string) *Self {
	addrs := make([]string, len(listeners))
	for i, a := range listeners {
		addrs[i] = a.String()
	}
	locals := make([]string, len(local))
	for i, a := range local {
		locals[i] = a.String()
	}
	return SelfOf(addrs, locals, append([]string{"localhost"}, hostnames...))
}

// SelfOf is the Self of a peer replica from what it published (Addresses):
// its listeners as bound (host:port), its host's addresses and its host's
// names. What does not parse is skipped: a peer's view is read, not
// trusted, and an entry this version cannot read recognises nothing.
func SelfOf(listeners, local, names []string) *Self {
	s := &Self{}
	for _, l := range listeners {
		if ap, err := netip.ParseAddrPort(l); err == nil {
			s.listeners = append(s.listeners, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		}
	}
	for _, a := range local {
		if addr, err := netip.ParseAddr(a); err == nil {
			s.local = append(s.local, addr.Unmap())
		}
	}
	for _, n := range names {
		if n = hostname.Normal(n); n != "" {
			s.names = append(s.names, n)
		}
	}
	return s
}

// Addresses are what s compares a URL with, as text a peer reads back
// with SelfOf: the listeners as bound, the host's addresses and the
// host's names (localhost among them).
func (s *Self) Addresses() (listeners, local, names []string) {
	if s == nil {
		return nil, nil, nil
	}
	for _, l := range s.listeners {
		listeners = append(listeners, l.String())
	}
	for _, a := range s.local {
		local = append(local, a.String())
	}
	return listeners, local, append([]string(nil), s.names...)
}

// Targets reports whether a request to rawURL, or to any path under it,
// reaches one of the listeners.
func (s *Self) Targets(rawURL string) bool {
	if s == nil {
		return false
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return false
	}
	port, ok := urlPort(u)
	if !ok {
		return false
	}
	host := hostname.Normal(u.Hostname())
	addr, err := netip.ParseAddr(host)
	isAddr := err == nil
	for _, l := range s.listeners {
		if l.Port() != port {
			continue
		}
		switch {
		case !isAddr:
			if s.isName(host) {
				return true
			}
		case addr.Unmap() == l.Addr():
			return true
		case l.Addr().IsUnspecified() && s.isLocal(addr.Unmap()):
			return true
		case addr.Unmap().IsUnspecified() && s.isLocal(l.Addr()):
			// A connection to the unspecified address (0.0.0.0, ::) is a
			// connection to this host: Linux and the BSDs take it for
			// loopback. So it reaches a listener on loopback or on any of
			// the host's addresses.
			return true
		}
	}
	return false
}

func (s *Self) isName(host string) bool {
	for _, n := range s.names {
		if host == n || (n == "localhost" && strings.HasSuffix(host, ".localhost")) {
			return true
		}
	}
	return false
}

// isLocal reports whether addr reaches a listener on an unspecified
// address: a loopback or unspecified address, or one of the host's.
func (s *Self) isLocal(addr netip.Addr) bool {
	if addr.IsLoopback() || addr.IsUnspecified() {
		return true
	}
	for _, l := range s.local {
		if l.Unmap() == addr {
			return true
		}
	}
	return false
}

// urlPort is the port a request to u connects to.
func urlPort(u *url.URL) (uint16, bool) {
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		return uint16(n), err == nil
	}
	switch u.Scheme {
	case "http":
		return 80, true
	case "https":
		return 443, true
	}
	return 0, false
}
