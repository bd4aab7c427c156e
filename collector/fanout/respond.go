package fanout

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// fanoutError is the JSON body of a fan-out answer that is probegate's own.
type fanoutError struct {
	Error    string                `json:"error"`
	Backends []fanoutBackendResult `json:"backends,omitempty"`
}

// fanoutBackendResult says why one backend did not contribute.
type fanoutBackendResult struct {
	Backend string `json:"backend"`
	Reason  string `json:"reason"`
	Status  int    `json:"status,omitempty"`
}

// refuse answers a request that starts no round.
func (f *Fanout) refuse(w http.ResponseWriter, status int, message string) {
	w.Header().Set("X-Backends", backendsHeader(0, f.pool.Len()))
	writeFanoutError(w, status, fanoutError{Error: message})
}

// writeNoAnswer is the 502 of a round to which nobody contributed and
// nobody refused the query: it names each backend and why, the skipped
// (out of service, not asked) ones too.
func writeNoAnswer(w http.ResponseWriter, r *http.Request, answers []backendAnswer, skipped []string) {
	e := fanoutError{Error: "no backend contributed to the fan-out"}
	if len(answers)+len(skipped) == 0 {
		e.Error = "no backends are configured"
	}
	for _, a := range answers {
		e.Backends = append(e.Backends, fanoutBackendResult{
			Backend: a.backend.Name, Reason: a.outcome.Reason.String(), Status: a.status,
		})
	}
	for _, name := range skipped {
		e.Backends = append(e.Backends, fanoutBackendResult{Backend: name, Reason: skippedReason})
	}
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	writeFanoutError(w, http.StatusBadGateway, e)
}

// writeFanoutError answers with probegate's own JSON error.
func writeFanoutError(w http.ResponseWriter, status int, e fanoutError) {
	body, _ := json.Marshal(e) // Strings and ints only: it cannot fail.
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
