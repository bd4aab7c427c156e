package status

import (
	"net/http"

	"github.com/probegate/probegate/collector/discovery"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/jsonanswer"
)

// apiAnswer is the body of the JSON introspection endpoints, shaped as
// Prometheus shapes its own: {"status":"success","data":...}.
type apiAnswer struct {
	Status    string `json:"status"`
	Data      any    `json:"data,omitempty"`
	ErrorType string `json:"errorType,omitempty"`
	Error     string `json:"error,omitempty"`
}

type configData struct {
	YAML string `json:"yaml"`
}

// ConfigHandler answers GET (and HEAD) with the configuration running
// returns, as YAML with every secret hidden, where Prometheus serves its
// own (/api/v1/status/config).
func ConfigHandler(running func() *config.Config) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !readOnly(w, r) {
			return
		}
		out, err := running().RedactedYAML()
		if err != nil {
			jsonanswer.Write(w, r, http.StatusInternalServerError, apiAnswer{Status: "error", ErrorType: "internal", Error: err.Error()})
			return
		}
		jsonanswer.Write(w, r, http.StatusOK, apiAnswer{Status: "success", Data: &configData{YAML: string(out)}})
	})
}

// DiscoveryAPIHandler answers GET (and HEAD) with every discovered target
// of the last update as JSON: its labels before relabelling, every
// password redacted, and the backend it became or why it was dropped.
// ?target=ADDR answers only the targets whose address, backend name or
// host:port holds it in any case (a URL stands for its host:port),
// found whatever the caps. DiscoveryHandler serves the same as a page.
func DiscoveryAPIHandler(view func(target string) discovery.View) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !readOnly(w, r) {
			return
		}
		target, err := targetParam(r)
		if err != nil {
			jsonanswer.Write(w, r, http.StatusBadRequest, apiAnswer{Status: "error", ErrorType: "bad_data", Error: err.Error()})
			return
		}
		jsonanswer.Write(w, r, http.StatusOK, apiAnswer{Status: "success", Data: view(target)})
	})
}

// readOnly answers 405 to a request that is neither GET nor HEAD, and
// reports whether the request may go on.
func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	jsonanswer.Write(w, r, http.StatusMethodNotAllowed, apiAnswer{Status: "error", ErrorType: "bad_data", Error: "method not allowed: use GET"})
	return false
}
