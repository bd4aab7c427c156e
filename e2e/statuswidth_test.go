package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// measuredPage serves page's body with a script that writes the page's
// layout width into the body's data-scroll-width, for chromium's
// --dump-dom to report: probegate's pages carry no script of their own.
func measuredPage(t *testing.T, page string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		resp, err := http.Get(page)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		const measure = `<script>document.body.setAttribute("data-scroll-width", document.documentElement.scrollWidth)</script></body>`
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(bytes.Replace(body, []byte("</body>"), []byte(measure), 1))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestStatusPageFitsAndNamesItsReplica: /status of the demo, every
// backend settled and named by --replica.name, is laid out by headless
// Chromium in a 1,400 px wide window without horizontal scrolling, and
// names the replica it is served by.
func TestStatusPageFitsAndNamesItsReplica(t *testing.T) {
	p := startProbegate(t, "demo", "--replica.name=pg-eu-1")
	waitFor(t, 15*time.Second, "every demo backend settled in /healthz", func() bool {
		healthz := getHealthz(t, p.base)
		for name, state := range demoSettled {
			if healthz[name].State != state {
				return false
			}
		}
		return true
	})
	page := measuredPage(t, p.base+"/status?refresh=0")
	dom := chromium(t, page.URL, "--dump-dom", "--window-size=1400,900")
	m := regexp.MustCompile(`data-scroll-width="(\d+)"`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the page was not measured:\n%s", dom)
	}
	if width, _ := strconv.Atoi(string(m[1])); width > 1400 {
		t.Errorf("/status is %d px wide in a 1,400 px window: it scrolls sideways", width)
	}
	if !bytes.Contains(dom, []byte(`<strong data-field="replica">pg-eu-1</strong>`)) {
		t.Error("/status does not name the replica pg-eu-1")
	}
}
