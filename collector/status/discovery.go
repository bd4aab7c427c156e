package status

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"github.com/probegate/probegate/collector/discovery"
)

//go:embed discovery.html
var discoverySource string

var discoveryPage = template.Must(template.New("discovery").Funcs(template.FuncMap{"total": total}).Parse(discoverySource))

// total is the sum of counts: all the dropped targets of a source.
func total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// DiscoveryHandler serves /status/discovery to GET and HEAD: per
// discovery source, every target of the last update with the labels it
// was discovered with, and the backend it became or why it was dropped.
// ?target=ADDR shows only the targets whose address, backend name or
// host:port holds it in any case (a URL stands for its host:port), found
// whatever the caps; the page's search form asks for it. view is read
// once per render.
func DiscoveryHandler(view func(target string) discovery.View) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: use GET", http.StatusMethodNotAllowed)
			return
		}
		target, err := targetParam(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		render(w, r, discoveryPage, view(target))
	})
}

// maxTargetParam bounds the target a client may search for: an address
// or a backend name, never more.
const maxTargetParam = 1024

// targetParam is the ?target= of a discovery request, trimmed.
func targetParam(r *http.Request) (string, error) {
	target := strings.TrimSpace(r.URL.Query().Get("target"))
	if len(target) > maxTargetParam {
		return "", fmt.Errorf("target: at most %d bytes, an address such as 10.0.0.1:8080 or a backend name", maxTargetParam)
	}
	return target, nil
}

// render writes the page t renders from data, or a 500 naming what
// failed; HEAD gets the headers only.
func render(w http.ResponseWriter, r *http.Request, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		http.Error(w, "render "+r.URL.Path+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(buf.Bytes())
	}
}
