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

// healthServer is the server of --web.health-listen-address: /health and
// /ready only, plain HTTP, never behind the web configuration's TLS or
// basic auth (an AWS ALB or a kubelet cannot authenticate), with its own
// small connection limit and short timeouts. It returns nil when the flag
// is not set.
func (o *options) healthServer(health, ready http.Handler) (*http.Server, net.Listener, error) {
	if o.HealthListenAddress == "" {
		return nil, nil, nil
	}
	l, err := net.Listen("tcp", o.HealthListenAddress)
	if err != nil {
		return nil, nil, fmt.Errorf("--web.health-listen-address=%s: %w", o.HealthListenAddress, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/health", health)
	mux.Handle("/ready", ready)
	srv := &http.Server{
		Handler:           framing.Handler(mux),
		ConnContext:       framing.ConnContext,
		ReadHeaderTimeout: min(5*time.Second, time.Duration(o.ReadHeaderTimeout)),
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    min(8<<10, o.MaxHeaderBytes),
	}
	return srv, framing.Listener(netutil.LimitListener(l, healthMaxConnections)), nil
}

// ownListeners are every listener of probegate's: the main ones, and the
// health and admin listeners when they are on (nil when off).
func ownListeners(main []net.Listener, health, admin net.Listener) []net.Listener {
	own := slices.Clone(main)
	for _, l := range []net.Listener{health, admin} {
		if l != nil {
			own = append(own, l)
		}
	}
	return own
}
