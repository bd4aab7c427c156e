package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// echoingBackend is a backend whose 400 page echoes the query parameter x
// unescaped, as careless error pages do, and counts the requests of its
// /beacon, which the injected script calls first: a beacon is proof that
// the script ran.
func echoingBackend(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var beacons atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			w.WriteHeader(http.StatusOK)
		case "/beacon":
			beacons.Add(1)
			w.Header().Set("Access-Control-Allow-Origin", "*")
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "<!doctype html><html><body><p>bad query: %s</p></body></html>", r.URL.Query().Get("x"))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &beacons
}

// injectedScript is what a hostile link puts in the query: it calls the
// backend's beacon, then asks, same-origin, for maintenance of both
// backends and for a reload, as a page of probegate's would.
func injectedScript(beacon string) string {
	return `<script>
fetch("` + beacon + `", {mode: "no-cors"});
for (const name of ["b0", "b1"]) {
  fetch("/api/v1/backends/" + name + "/maintenance?force=true", {method: "POST", body: JSON.stringify({reason: "pwned"})});
}
fetch("/-/reload", {method: "POST"});
</script>`
}

// TestRelayedPageRunsNoScriptOnProbegatesOrigin is the audit's attack in
// a real browser: a link to a fan-out query whose parameter the backends
// echo into their 400 page. Opened in headless Chromium, the relayed page
// must run no script, and nothing may change: no backend goes into
// maintenance. The same page opened from the backend itself does run
// the script (its beacon arrives), so the payload is proven live.
func TestRelayedPageRunsNoScriptOnProbegatesOrigin(t *testing.T) {
	backend, beacons := echoingBackend(t)
	cfg := fanoutConfig(t, "", "", backend.URL, backend.URL)
	p := startProbegate(t, "--config.file="+cfg, "--web.enable-admin-api", "--web.enable-lifecycle", "--storage.path="+t.TempDir())
	waitFor(t, 10*time.Second, "both backends healthy", func() bool {
		h := getHealthz(t, p.base)
		return h["b0"].State == "healthy" && h["b1"].State == "healthy"
	})
	query := "/q?x=" + url.QueryEscape(injectedScript(backend.URL+"/beacon"))
	browse := func(target string) {
		chromium(t, target, "--dump-dom", "--virtual-time-budget=5000")
	}

	browse(backend.URL + query)
	if beacons.Load() == 0 {
		t.Fatal("the script did not run even on the backend's own page: the test proves nothing")
	}
	before := beacons.Load()

	browse(p.base + "/fanout" + query)
	if ran := beacons.Load() - before; ran != 0 {
		t.Errorf("the relayed page ran the injected script (%d beacons) on probegate's origin", ran)
	}
	// Whatever the script sent has arrived by the time Chromium exits.
	for name, b := range getHealthz(t, p.base) {
		if b.State == "maintenance" {
			t.Errorf("backend %s went into maintenance through the relayed page", name)
		}
	}
}
