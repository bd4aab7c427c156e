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
		Instance: instance, Version: version.Version, Started: started, MetricsPath: s.opts.TelemetryPath,
		Store: s.maint.manager.Status, Replicas: s.maint.liveReplicas(), AdminAPI: s.opts.EnableAdminAPI,
	}))
	mux.HandleFunc(configPath, s.handleConfig)
	mux.HandleFunc(discoveryPath, s.handleDiscovery)
	mux.Handle(discoveryPagePath, status.DiscoveryHandler(s.sd.View))
}

// apiAnswer is the body of /api/v1/status/config and /api/v1/discovery,
// shaped as Prometheus shapes its own: {"status":"success","data":...}.
type apiAnswer struct {
	Status    string `json:"status"`
	Data      any    `json:"data,omitempty"`
	ErrorType string `json:"errorType,omitempty"`
	Error     string `json:"error,omitempty"`
}

type configData struct {
	YAML string `json:"yaml"`
}

// handleConfig answers GET with the running configuration as YAML, every
// secret hidden.
func (s *server) handleConfig(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	cfg := s.targets.Running()
	out, err := cfg.RedactedYAML()
	if err != nil {
		writeAPIAnswer(w, r, http.StatusInternalServerError, apiAnswer{Status: "error", ErrorType: "internal", Error: err.Error()})
		return
	}
	writeAPIAnswer(w, r, http.StatusOK, apiAnswer{Status: "success", Data: &configData{YAML: string(out)}})
}

// handleDiscovery answers GET with every discovered target of the last
// update: its labels before relabelling, every password redacted, and the
// backend it became or why it was dropped.
func (s *server) handleDiscovery(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	writeAPIAnswer(w, r, http.StatusOK, apiAnswer{Status: "success", Data: s.sd.View()})
}

// readOnly answers 405 to a request that is neither GET nor HEAD, and
// reports whether the request may go on.
func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeAPIAnswer(w, r, http.StatusMethodNotAllowed, apiAnswer{Status: "error", ErrorType: "bad_data", Error: "method not allowed: use GET"})
	return false
}

func writeAPIAnswer(w http.ResponseWriter, r *http.Request, code int, a apiAnswer) {
	body, _ := json.Marshal(a) // Strings, numbers, maps and slices only: it cannot fail.
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(append(body, '\n'))
	}
}
