package main

import (
	"fmt"
	"net"

	"golang.org/x/net/netutil"
)

// agentListener is the listener of --web.agent-listen-address, nil when
// the flag is empty. It speaks HAProxy's agent protocol, not HTTP, so
// neither the web configuration nor the HTTP guards stand in front of it:
// what it tells is what /healthz shows of each backend, to a client that
// names it, and it changes nothing. HAProxy asks once per server per
// agent-inter, on a connection of its own each time, so the listener is
// bounded like a main listener, by --web.max-connections: beyond it a
// connection waits in the kernel's backlog.
func (o *options) agentListener() (net.Listener, error) {
	if o.AgentListenAddress == "" {
		return nil, nil
	}
	if o.MaxConnections < 1 {
		return nil, fmt.Errorf("--web.max-connections=%d: want 1 or more", o.MaxConnections)
	}
	l, err := net.Listen("tcp", o.AgentListenAddress)
	if err != nil {
		return nil, fmt.Errorf("--web.agent-listen-address=%s: %w", o.AgentListenAddress, err)
	}
	return netutil.LimitListener(l, o.MaxConnections), nil
}
