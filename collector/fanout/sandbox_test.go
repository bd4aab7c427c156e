package fanout

import (
	"net/http"
	"testing"
)

// TestFanoutAnswersAreSandboxed: every fan-out answer, a relayed HTML
// refusal above all, tells a browser to run nothing of it on probegate's
// origin and not to guess its type.
func TestFanoutAnswersAreSandboxed(t *testing.T) {
	html := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`<script>fetch("/api/v1/backends/b0/maintenance",{method:"POST"})</script>`))
	}
	for name, handler := range map[string]http.HandlerFunc{
		"merged":          answer(200, `[]`),
		"relayed 4xx":     html,
		"nobody answered": answer(500, `oops`),
	} {
		t.Run(name, func(t *testing.T) {
			rig := setup(t, options{}, serve(t, handler))
			for _, target := range []string{"/fanout/q", "/fanout/../q"} {
				rec := rig.do("GET", target, "", nil)
				if csp, sniff := rec.Header().Get("Content-Security-Policy"), rec.Header().Get("X-Content-Type-Options"); csp != "sandbox" || sniff != "nosniff" {
					t.Errorf("GET %s: %d with Content-Security-Policy %q, X-Content-Type-Options %q; want sandbox, nosniff", target, rec.Code, csp, sniff)
				}
			}
		})
	}
}
