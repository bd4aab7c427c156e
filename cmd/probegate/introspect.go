package main

import (
	"net/http"
	"os"
	"time"

	"github.com/prometheus/common/version"

	"github.com/probegate/probegate/collector/status"
)

// configPath serves the running configuration, where Prometheus serves
// its own.
const configPath = "/api/v1/status/config"

// discoveryPath and discoveryPagePath serve what service discovery made
// of every discovered target, as JSON and as a page.
const (
	discoveryPath     = "/api/v1/discovery"
	discoveryPagePath = "/status/discovery"
)

// mountIntrospection serves the status page, the running configuration
// and the discovery view. It is called once service discovery runs.
func (s *server) mountIntrospection(mux *http.ServeMux, started time.Time) {
	instance, err := os.Hostname()
	if err != nil {
		instance = "unknown host"
	}
	mux.Handle("/status", status.Handler(status.Options{
		Pool: s.pool, LastRound: s.fanout.LastRound, Draining: s.gate.Draining,
		Replica: s.opts.replicaName(), Instance: instance, Version: version.Version, Started: started, MetricsPath: s.opts.TelemetryPath,
		Store: s.maint.Status, Replicas: s.maint.LiveReplicas(), AdminAPI: s.opts.EnableAdminAPI,
	}))
	mux.Handle(configPath, status.ConfigHandler(s.targets.Running))
	mux.Handle(discoveryPath, status.DiscoveryAPIHandler(s.sd.View))
	mux.Handle(discoveryPagePath, status.DiscoveryHandler(s.sd.View))
}
