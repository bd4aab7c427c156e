package main

import (
	"net"
	"net/netip"
	"os"

	"github.com/probegate/probegate/collector/fanout"
)

// selfPredicate recognises the backend URLs that lead back to one of the
// listen addresses, at any path, on this host's addresses and names.
// addrs are every listener of probegate's: main, health and admin. It
// takes addresses, not listeners, so that a configuration can be judged
// against the flags' addresses without listening.
func selfPredicate(addrs []net.Addr) *fanout.Self {
	var local []netip.Addr
	if ifaddrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range ifaddrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok {
					local = append(local, ip.Unmap())
				}
			}
		}
	}
	var names []string
	if host, err := os.Hostname(); err == nil {
		names = append(names, host)
	}
	return fanout.NewSelf(addrs, local, names)
}
