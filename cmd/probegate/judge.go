package main

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"strings"

	toolkitweb "github.com/prometheus/exporter-toolkit/web"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/config"
)

// judge is the one judgement of a configuration, which check-config,
// start-up and every reload make alike, so that what check-config calls
// an error no replica starts with or reloads into. It reads the file and
// the flags that override it and validates the result, then refuses what
// validation alone cannot see: an HTTP client that cannot be built (a TLS
// file missing), a readiness budget the listed backends can never meet, a
// static backend that leads back to one of probegate's own listeners,
// listen, and a --web.config.file that does not load. Every problem is
// named at once, a configuration with problems is checked on, and the
// problems come in the order of the file. It returns the configuration
// and its warnings (valid, but most likely a mistake), or an error and
// no configuration.
func (o *options) judge(listen []net.Addr) (*config.Config, []config.Problem, error) {
	if path, explicit := o.configPath(); !explicit && !o.overrides.AddsBackends() {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: not found, and no --backend given: nothing to probe. "+
				"Name the configuration file with --config.file, or give backends with --backend NAME=URL", path)
		}
	}
	cfg, err := o.loadConfig()
	if cfg == nil {
		return nil, nil, err
	}
	// A configuration with problems is checked on: its other problems
	// are named in the same run.
	err = config.JoinErrors(err, cfg.CheckHTTPClients(), budget.CheckStaticBudget(cfg), selfPredicate(listen).CheckBackends(cfg), o.checkWebConfig())
	if err != nil {
		return nil, nil, inFileOrder(err)
	}
	return cfg, cfg.Warnings(), nil
}

// inFileOrder sorts the problems of a joined *config.Error by file and
// line, as one reads the file, those at no line of it (flags, the web
// configuration, a key the file lacks) after them in the order they were
// found.
func inFileOrder(err error) error {
	var e *config.Error
	if !errors.As(err, &e) {
		return err
	}
	slices.SortStableFunc(e.Problems, func(a, b config.Problem) int {
		placed := func(p config.Problem) bool { return p.File != "" && p.Line > 0 && p.Origin == "" }
		switch {
		case placed(a) != placed(b):
			if placed(a) {
				return -1
			}
			return 1
		case !placed(a):
			return 0
		}
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return e
}

// checkWebConfig loads --web.config.file as the listeners will.
func (o *options) checkWebConfig() error {
	if err := toolkitweb.Validate(o.WebConfigFile); err != nil {
		return fmt.Errorf("--web.config.file %s: %v", o.WebConfigFile, err)
	}
	return nil
}

// flagListenAddrs are the addresses of every listener the flags name
// (main, health, agent, admin), for check-config, which opens no listener: an
// address without a host is every address of the host, as the listener on
// it would be. With --web.systemd-socket the main sockets are the service
// manager's, and only start-up knows them.
func (o *options) flagListenAddrs() ([]net.Addr, error) {
	var addrs []net.Addr
	add := func(flag, a string) error {
		tcp, err := net.ResolveTCPAddr("tcp", a)
		if err != nil {
			return fmt.Errorf("--%s=%s: %w", flag, a, err)
		}
		if tcp.IP == nil {
			tcp.IP = net.IPv6unspecified
		}
		addrs = append(addrs, tcp)
		return nil
	}
	if !o.SystemdSocket {
		for _, a := range o.ListenAddresses {
			if err := add("web.listen-address", a); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range []struct{ flag, addr string }{
		{"web.health-listen-address", o.HealthListenAddress},
		{"web.agent-listen-address", o.AgentListenAddress},
		{"web.admin-listen-address", o.adminAddress()},
	} {
		if f.addr == "" {
			continue
		}
		if err := add(f.flag, f.addr); err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

// listenerAddrs are the addresses of open listeners.
func listenerAddrs(listeners []net.Listener) []net.Addr {
	addrs := make([]net.Addr, len(listeners))
	for i, l := range listeners {
		addrs[i] = l.Addr()
	}
	return addrs
}
