package fanout

import (
	"fmt"
	"net/http"

	"github.com/probegate/probegate/internal/jsonanswer"
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

// sandbox marks every fan-out answer as content that must never run as a
// page of probegate's origin: a relayed 4xx carries the backend's own
// Content-Type, and a backend that echoes a query parameter into an HTML
// error page would otherwise run the client's script on the origin that
// also serves probegate's pages. A sandboxed document has an opaque
// origin and runs no script; nosniff keeps a browser from guessing HTML
// from a body declared as something else.
func sandbox(h http.Header) {
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("X-Content-Type-Options", "nosniff")
}

// refuse answers a request that starts no round.
func (f *Fanout) refuse(w http.ResponseWriter, status int, message string) {
	groups, _, _ := f.pool.GroupSelection()
	w.Header().Set("X-Backends", backendsHeader(0, roundUnits(groups)))
	jsonanswer.Write(w, nil, status, fanoutError{Error: message})
}

// writeNoAnswer is the 502 of a round to which nobody contributed and
// nobody refused the query: it names each backend and why, the skipped
// (not asked) ones too.
func writeNoAnswer(w http.ResponseWriter, r *http.Request, missing []missingBackend) {
	e := fanoutError{Error: "no backend contributed to the fan-out", Backends: missingResults(missing)}
	if len(missing) == 0 {
		e.Error = "no backends are configured"
	}
	jsonanswer.Write(w, r, http.StatusBadGateway, e)
}

// writeNoQuorum is the 503 of a round with fewer contributions than
// fanout.min_contributors, or the client's Probegate-Min-Contributors,
// asks for (asker says which): a partial answer the client said it cannot
// use. It names each missing backend and why.
func writeNoQuorum(w http.ResponseWriter, r *http.Request, contributed, configured, quorum int, asker string, missing []missingBackend) {
	jsonanswer.Write(w, r, http.StatusServiceUnavailable, fanoutError{
		Error: fmt.Sprintf("%d of %d backends contributed, fewer than the %d %s asks for",
			contributed, configured, quorum, asker),
		Backends: missingResults(missing),
	})
}
