package status

import (
	"bytes"
	_ "embed"
	"html/template"
	"net/http"
	"strconv"

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
// discovery mechanism, every target of the last update with the labels
// it was discovered with, and the backend it became or why it was
// dropped. view is read once per render.
func DiscoveryHandler(view func() discovery.View) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: use GET", http.StatusMethodNotAllowed)
			return
		}
		render(w, r, discoveryPage, view())
	})
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
