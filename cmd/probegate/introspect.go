package main

import (
	"encoding/json"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/common/version"

	"github.com/probegate/probegate/collector/status"
)

// configPath serves the running configuration, where Prometheus serves
// its own.
const configPath = "/api/v1/status/config"

// mountIntrospection serves the status page and the running
// configuration.
func (s *server) mountIntrospection(mux *http.ServeMux, started time.Time) {
	instance, err := os.Hostname()
	if err != nil {
		instance = "unknown host"
	}
	mux.Handle("/status", status.Handler(status.Options{
		Pool: s.pool, LastRound: s.fanout.LastRound, Draining: s.gate.Draining,
		Instance: instance, Version: version.Version, Started: started, MetricsPath: s.opts.TelemetryPath,
		Store: s.maint.manager.Status, Replicas: s.maint.liveReplicas(), AdminAPI: s.opts.EnableAdminAPI,
	}))
	mux.HandleFunc(configPath, s.handleConfig)
}

// configAnswer is the body of /api/v1/status/config, shaped as Prometheus
// shapes its own: {"status":"success","data":{"yaml":"..."}}.
type configAnswer struct {
	Status    string      `json:"status"`
	Data      *configData `json:"data,omitempty"`
	ErrorType string      `json:"errorType,omitempty"`
	Error     string      `json:"error,omitempty"`
}

type configData struct {
	YAML string `json:"yaml"`
}

// handleConfig answers GET with the running configuration as YAML, every
// secret hidden.
func (s *server) handleConfig(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeConfigAnswer(w, r, http.StatusMethodNotAllowed, configAnswer{Status: "error", ErrorType: "bad_data", Error: "method not allowed: use GET"})
		return
	}
	cfg := s.running.Load()
	out, err := cfg.RedactedYAML()
	if err != nil {
		writeConfigAnswer(w, r, http.StatusInternalServerError, configAnswer{Status: "error", ErrorType: "internal", Error: err.Error()})
		return
	}
	writeConfigAnswer(w, r, http.StatusOK, configAnswer{Status: "success", Data: &configData{YAML: string(out)}})
}

func writeConfigAnswer(w http.ResponseWriter, r *http.Request, code int, a configAnswer) {
	body, _ := json.Marshal(a) // Strings only: it cannot fail.
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(append(body, '\n'))
	}
}
