package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"golang.org/x/net/netutil"

	"github.com/probegate/probegate/internal/framing"
)

// healthMaxConnections bounds the health listener. Balancers and kubelets
// poll with a handful of connections; a small bound keeps a misbehaving
// poller from taking what the main listener needs, and the main
// listener's flood from mattering here at all.
const healthMaxConnections = 64

// mainListeners opens the main listeners: the systemd-activated sockets or
// one per --web.listen-address, each limited to --web.max-connections
// connections at once. Beyond the limit a connection waits in the
// kernel's backlog instead of costing a descriptor and a goroutine.
func (o *options) mainListeners() ([]net.Listener, error) {
	if o.MaxConnections < 1 {
		return nil, fmt.Errorf("--web.max-connections=%d: want 1 or more", o.MaxConnections)
	}
	if o.ReadTimeout <= 0 {
		return nil, fmt.Errorf("--web.read-timeout=%s: want a positive duration such as 1m", o.ReadTimeout)
	}
	var listeners []net.Listener
	if o.SystemdSocket {
		activated, err := activation.Listeners()
		if err != nil {
			return nil, fmt.Errorf("systemd socket activation: %w", err)
		}
		if len(activated) == 0 {
			return nil, errors.New("--web.systemd-socket: no socket activation file descriptors found")
		}
		listeners = activated
	} else {
		for _, addr := range o.ListenAddresses {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				closeAll(listeners)
				return nil, fmt.Errorf("--web.listen-address=%s: %w", addr, err)
			}
			listeners = append(listeners, l)
		}
	}
	for i, l := range listeners {
		listeners[i] = framing.Listener(netutil.LimitListener(l, o.MaxConnections))
	}
	return listeners, nil
}

func closeAll(listeners []net.Listener) {
	for _, l := range listeners {
		l.Close()
	}
}

// listenerSet is every listener of probegate's, opened before the
// configuration is judged: the configuration is judged against their
// addresses (a backend on one of them is probegate itself), as
// check-config judges it against the flags' addresses and a reload
// against the same listeners'.
type listenerSet struct {
	main []net.Listener
	// health, agent and admin are nil when their flag is empty.
	health, agent, admin net.Listener
}

// openListeners opens the main listeners and, when their flags are set,
// the health, the agent and the admin listener, the last only when
// something is served there (adminAddress). On an error it closes what it
// opened.
func (o *options) openListeners() (listenerSet, error) {
	var ls listenerSet
	var err error
	if ls.main, err = o.mainListeners(); err != nil {
		return ls, err
	}
	if ls.health, err = listenOptional("web.health-listen-address", o.HealthListenAddress, healthMaxConnections); err == nil {
		if ls.agent, err = o.agentListener(); err == nil {
			ls.admin, err = listenOptional("web.admin-listen-address", o.adminAddress(), adminMaxConnections)
		}
	}
	if err != nil {
		ls.close()
		return listenerSet{}, err
	}
	return ls, nil
}

// listenOptional listens on addr, the value of --flag, with at most max
// connections at once; an empty addr is a listener that is off (nil).
func listenOptional(flag, addr string, max int) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--%s=%s: %w", flag, addr, err)
	}
	return framing.Listener(netutil.LimitListener(l, max)), nil
}

// all are every open listener of the set.
func (ls listenerSet) all() []net.Listener {
	own := slices.Clone(ls.main)
	for _, l := range []net.Listener{ls.health, ls.agent, ls.admin} {
		if l != nil {
			own = append(own, l)
		}
	}
	return own
}

// close closes every listener of the set.
func (ls listenerSet) close() { closeAll(ls.all()) }

// healthServer is the server of --web.health-listen-address: /health and
// /ready only, plain HTTP, never behind the web configuration's TLS or
// basic auth (an AWS ALB or a kubelet cannot authenticate), with its own
// small connection limit and short timeouts.
func (o *options) healthServer(health, ready http.Handler) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/health", health)
	mux.Handle("/ready", ready)
	return &http.Server{
		Handler:           framing.Handler(mux),
		ConnContext:       framing.ConnContext,
		ReadHeaderTimeout: min(5*time.Second, time.Duration(o.ReadHeaderTimeout)),
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    serverMaxHeaderBytes(min(8<<10, o.MaxHeaderBytes)),
	}
}
