package e2e

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// adminPaths are the admin interface's requests: the maintenance API, its
// list, the debug probe, the replica views and the reload.
var adminPaths = []struct{ method, path string }{
	{"GET", "/api/v1/backends"},
	{"POST", "/api/v1/backends/a/maintenance"},
	{"GET", "/api/v1/backends/a/probe"},
	{"GET", "/api/v1/replicas"},
	{"POST", "/-/reload"},
}

// TestAdminInterfaceOnItsOwnListener: the admin API, /-/reload and
// /api/v1/replicas answer 404 on the main listener, whatever the flags,
// and are served on the admin listener alone; the main listener's pages
// are not served there.
func TestAdminInterfaceOnItsOwnListener(t *testing.T) {
	p := startProbegate(t, "--backend=a="+okBackend(t).URL, "--web.enable-admin-api", "--web.enable-lifecycle",
		"--storage.path="+t.TempDir())
	for _, c := range adminPaths {
		if code, _, body := apiCall(t, c.method, p.base+c.path, `{"reason":"x"}`); code != http.StatusNotFound {
			t.Errorf("main listener: %s %s = %d %q; want 404", c.method, c.path, code, body)
		}
	}
	if code, _, body := apiCall(t, "GET", p.admin+"/api/v1/backends", ""); code != http.StatusOK || !strings.Contains(body, `"a"`) {
		t.Errorf("admin listener: GET /api/v1/backends = %d %q; want 200 listing a", code, body)
	}
	if code, _, body := apiCall(t, "POST", p.admin+"/-/reload", ""); code != http.StatusOK {
		t.Errorf("admin listener: POST /-/reload = %d %q; want 200", code, body)
	}
	if code, _, body := apiCall(t, "POST", p.admin+"/api/v1/backends/a/maintenance?force=true", `{"reason":"disk"}`); code != http.StatusOK {
		t.Errorf("admin listener: POST maintenance = %d %q; want 200", code, body)
	}
	for _, path := range []string{"/metrics", "/status", "/healthz", "/fanout/x", "/"} {
		if code, _, _ := apiCall(t, "GET", p.admin+path, ""); code != http.StatusNotFound {
			t.Errorf("admin listener: GET %s = %d; want 404, it serves the admin interface only", path, code)
		}
	}
}

// TestAdminListenerIsBehindTheWebConfig: the admin listener serves TLS
// and demands the basic-auth credentials of --web.config.file, as the
// main listener does.
func TestAdminListenerIsBehindTheWebConfig(t *testing.T) {
	webConfig, pki := webConfigWithAuth(t)
	addr, admin := freeAddr(t), freeAddr(t)
	launchProbegate(t, addr, "--web.config.file="+webConfig, "--backend=a=http://127.0.0.1:1", "--web.enable-admin-api",
		"--storage.path="+t.TempDir(), "--web.admin-listen-address="+admin)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.CAPool}}}
	get := func(user, password string) int {
		req, _ := http.NewRequest(http.MethodGet, "https://"+admin+"/api/v1/backends", nil)
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor(t, 10*time.Second, "the admin listener over TLS", func() bool { return get("operator", "s3cret") == http.StatusOK })
	if code := get("", ""); code != http.StatusUnauthorized {
		t.Errorf("admin API without credentials: %d; want 401", code)
	}
	if code := get("operator", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("admin API with a wrong password: %d; want 401", code)
	}
	if resp, err := http.Get("http://" + admin + "/api/v1/backends"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP served the admin API although the web config demands TLS")
		}
	}
}

// TestTwoProbegatesOnOneHostNeedNoFlag: two probegates on one host, each
// with its own main listener and the default admin listen address, both
// start and serve: neither opens the admin listener, since neither serves
// anything there, and each says so once.
func TestTwoProbegatesOnOneHostNeedNoFlag(t *testing.T) {
	backend := okBackend(t)
	for i := range 2 {
		addr := freeAddr(t)
		cmd := exec.Command(binary(t), "--backend=a="+backend.URL, "--web.listen-address="+addr, "--storage.path="+t.TempDir())
		output, done := startProcess(t, fmt.Sprintf("probegate %d", i), cmd)
		waitFor(t, 10*time.Second, fmt.Sprintf("probegate %d's /healthz", i), func() bool {
			select {
			case <-done:
				t.Fatalf("probegate %d exited:\n%s", i, output)
			default:
			}
			resp, err := http.Get("http://" + addr + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		if out := output.String(); strings.Count(out, "No admin listener") != 1 || strings.Contains(out, "Serving the admin API") {
			t.Errorf("probegate %d does not say once that it opened no admin listener:\n%s", i, out)
		}
	}
}
