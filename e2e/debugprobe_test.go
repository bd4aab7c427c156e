package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestDebugProbeIsAdminAPI: the debug probe of the real binary answers
// 403 without --web.enable-admin-api (the admin listener open for
// /-/reload), and to a cross-site browser request; with the flag it
// probes the backend and reports the answer; a second one within the
// second is refused.
func TestDebugProbeIsAdminAPI(t *testing.T) {
	backend := okBackend(t)
	off := startProbegate(t, "--backend", "a="+backend.URL, "--storage.path="+t.TempDir(), "--web.enable-lifecycle")
	if code, _, body := apiCall(t, "GET", off.admin+"/api/v1/backends/a/probe", ""); code != http.StatusForbidden || !strings.Contains(body, "--web.enable-admin-api") {
		t.Errorf("without the flag: %d %s", code, body)
	}

	on := startProbegate(t, "--backend", "a="+backend.URL, "--web.enable-admin-api", "--storage.path="+t.TempDir())
	// A page of another site cannot make a browser probe the backends.
	crossSite, err := http.NewRequest("GET", on.admin+"/api/v1/backends/a/probe", nil)
	if err != nil {
		t.Fatal(err)
	}
	crossSite.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := http.DefaultClient.Do(crossSite); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site debug probe: %d, want 403", resp.StatusCode)
	}
	code, _, body := apiCall(t, "GET", on.admin+"/api/v1/backends/a/probe", "")
	var rep struct {
		Class    string `json:"class"`
		Status   int    `json:"status"`
		Response struct {
			Body string `json:"body"`
		} `json:"response"`
	}
	if err := json.Unmarshal([]byte(body), &rep); err != nil || code != http.StatusOK || rep.Class != "ok" || rep.Status != 200 || rep.Response.Body != "ok\n" {
		t.Errorf("with the flag: %d %s (%v)", code, body, err)
	}
	if code, header, _ := apiCall(t, "GET", on.admin+"/api/v1/backends/a/probe?format=text", ""); code != http.StatusTooManyRequests || header.Get("Retry-After") != "1" {
		t.Errorf("a second debug probe at once: %d, Retry-After %q; want 429, 1", code, header.Get("Retry-After"))
	}
}
