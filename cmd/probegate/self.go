package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/redact"
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

// selfTargets names every static backend of cfg whose URL leads back to
// one of probegate's own listeners: probegate would probe and fan out to
// itself, a round to its own fan-out asking it again, and a request at any
// other path reaching its own pages and admin API.
func selfTargets(self *fanout.Self, cfg *config.Config) error {
	var problems []config.Problem
	for i, b := range cfg.Backends {
		if self.Targets(b.URL) {
			problems = append(problems, cfg.ProblemAt(fmt.Sprintf("backends[%d].url", i),
				"backend %q: %s points at one of probegate's own listeners: probegate would probe and fan out to itself",
				b.Name, redact.URL(b.URL)))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &config.Error{Problems: problems}
}
