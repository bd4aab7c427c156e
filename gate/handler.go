package gate

import (
	"net/http"
)

// HealthHandler serves liveness: 200 "ok" whenever the process serves,
// draining included. It consults no check, so a failing dependency never
// gets the process restarted.
func (g *Gate) HealthHandler() http.Handler {
	// The header values are shared by every response: net/http only
	// reads them, and sharing keeps the handler free of allocations.
	contentType, noStore, body := []string{"text/plain; charset=utf-8"}, []string{"no-store"}, []byte("ok")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowMethod(w, r) {
			return
		}
		h := w.Header()
		h["Content-Type"] = contentType
		h["Cache-Control"] = noStore
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	})
}

// ReadyHandler serves readiness: 200 when not draining and every check
// passes, else 503, with an application/health+json body
// {"status":"pass"|"fail","draining":bool,"checks":{"<name>":{"status":...,"output":...}}}.
// Each ?exclude=<name> (repeatable) leaves a check out of the verdict; a
// name that matches no check is ignored, as Kubernetes' /readyz does.
func (g *Gate) ReadyHandler() http.Handler {
	// Shared header values, as in HealthHandler; the body and its length
	// come rendered with the evaluation.
	contentType, noStore := []string{"application/health+json"}, []string{"no-store"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowMethod(w, r) {
			return
		}
		ev, err := g.current(r.Context())
		if err != nil {
			// The client went away while the checks ran: nobody to answer.
			return
		}
		var exclude []string
		if r.URL.RawQuery != "" {
			exclude = r.URL.Query()["exclude"]
		}
		resp, pass := ev.response(g.draining.Load(), exclude)
		h := w.Header()
		h["Content-Type"] = contentType
		h["Cache-Control"] = noStore
		h["Content-Length"] = resp.contentLength
		status := http.StatusOK
		if !pass {
			status = http.StatusServiceUnavailable
		}
		w.WriteHeader(status)
		w.Write(resp.body)
	})
}

// allowMethod answers 405 to anything but GET and HEAD.
func allowMethod(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// Wrap returns h with keep-alive switched off once the drain has begun:
// every response from then on carries "Connection: close", so each HTTP/1
// connection ends after the response in progress or the next one, and an
// HTTP/2 connection gets a GOAWAY. Idle connections are not cut while the
// window lasts: closing a connection that a client may be reusing at that
// very moment is the one way to lose a request on it. Run wraps the
// server's handler itself.
func (g *Gate) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}
