package main

import (
	"net"
	"net/netip"
	"os"

	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/maintenance"
)

// selfPredicate recognises the backend URLs that lead back to one of the
// listen addresses, at any path, on this host's addresses and names.
// addrs are every listener of probegate's: main, health, agent and admin. It
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

// publishedListeners are self's addresses as this replica's view
// publishes them, so that its peers take a backend there for a loop.
func publishedListeners(self *fanout.Self) *maintenance.ReplicaListeners {
	listeners, local, names := self.Addresses()
	return &maintenance.ReplicaListeners{Addresses: listeners, HostAddresses: local, HostNames: names}
}

// followPeers has fleet take the peers' published listeners for loops
// and discovery apply the rule again, whenever the peers' views change
// what they say.
func followPeers(fleet *fanout.Fleet, detect func(isLoop func(string) bool)) func([]maintenance.ReplicaListeners) {
	return func(peers []maintenance.ReplicaListeners) {
		selves := make([]*fanout.Self, len(peers))
		for i, p := range peers {
			selves[i] = fanout.SelfOf(p.Addresses, p.HostAddresses, p.HostNames)
		}
		fleet.SetPeers(selves)
		detect(fleet.Targets)
	}
}
