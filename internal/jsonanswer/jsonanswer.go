// Package jsonanswer writes probegate's JSON answers over HTTP: the admin
// API's, the introspection API's, the fan-out's own errors and the
// lifecycle API's. Each endpoint chooses the shape of its body; this
// package is the one way it goes out, so that every such answer carries
// the same headers and answers HEAD alike.
package jsonanswer

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Error is the body of probegate's JSON errors: {"error": "..."}.
type Error struct {
	Error string `json:"error"`
}

// Write answers code with v as one line of JSON: Content-Type
// application/json, its Content-Length, and Cache-Control no-store, since
// every such answer describes a moment. A HEAD request gets the head
// alone. r is the request answered; nil stands for a GET, for a caller
// that only answers methods with a body. A v that cannot be encoded (only
// a non-finite float can fail) is a 500 that says so, never half a
// document.
func Write(w http.ResponseWriter, r *http.Request, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if r != nil && r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// WriteError answers code with {"error": msg}.
func WriteError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	Write(w, r, code, Error{Error: msg})
}
