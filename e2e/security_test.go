package e2e

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/probegate/probegate/internal/testpki"
)

// webConfigWithAuth writes an exporter-toolkit web config demanding TLS and
// basic auth (operator / s3cret) and returns its path and the test PKI.
func webConfigWithAuth(t *testing.T) (string, *testpki.PKI) {
	t.Helper()
	pki := testpki.New(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(path, []byte("tls_server_config:\n  cert_file: "+pki.ServerFile+"\n  key_file: "+pki.ServerKeyFile+
		"\nbasic_auth_users:\n  operator: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, pki
}

// TestHealthListenerServesOnlyTheGateWithoutAuth: behind a web config that
// demands TLS and basic auth, the health listener still answers /health
// and /ready over plain HTTP without credentials (what an AWS ALB or a
// kubelet can do), and serves nothing else.
func TestHealthListenerServesOnlyTheGateWithoutAuth(t *testing.T) {
	webConfig, pki := webConfigWithAuth(t)
	addr, healthAddr := freeAddr(t), freeAddr(t)
	launchProbegate(t, addr, "--web.config.file="+webConfig, "--web.health-listen-address="+healthAddr, "--backend=a=http://127.0.0.1:1")
	health := "http://" + healthAddr
	waitFor(t, 10*time.Second, "the health listener", func() bool {
		resp, err := http.Get(health + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	resp, err := http.Get(health + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	var ready struct {
		Status string `json:"status"`
		Checks map[string]struct {
			Status string `json:"status"`
		} `json:"checks"`
	}
	err = json.NewDecoder(resp.Body).Decode(&ready)
	resp.Body.Close()
	if err != nil || resp.Header.Get("Content-Type") != "application/health+json" || ready.Checks["backends"].Status == "" {
		t.Errorf("/ready on the health listener: %d %q %+v %v, want the gate's health+json with the backends check", resp.StatusCode, resp.Header.Get("Content-Type"), ready, err)
	}
	for _, path := range []string{"/metrics", "/healthz", "/fanout/x", "/-/reload", "/"} {
		resp, err := http.Get(health + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("health listener %s = %d, want 404: it serves /health and /ready only", path, resp.StatusCode)
		}
	}

	// The main listener keeps its protection.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.CAPool}}}
	resp, err = client.Get("https://" + addr + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("main listener /ready without credentials = %d, want 401", resp.StatusCode)
	}
}

// TestReloadEndpointNeedsTheLifecycleFlag: without --web.enable-lifecycle,
// POST /-/reload (on the admin listener the admin API opens) is refused
// with a JSON error naming the flag and nothing is reloaded, while SIGHUP
// still reloads.
func TestReloadEndpointNeedsTheLifecycleFlag(t *testing.T) {
	a, b := okBackend(t), okBackend(t)
	path := filepath.Join(t.TempDir(), "probegate.yml")
	writeConfig(t, path, map[string]string{"a": a.URL}, "")
	p := startProbegate(t, "--config.file="+path, "--web.enable-admin-api", "--storage.path="+t.TempDir())
	writeConfig(t, path, map[string]string{"a": a.URL, "b": b.URL}, "")

	resp, err := http.Post(p.admin+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	var e struct{ Error string }
	if resp.StatusCode != http.StatusForbidden || json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, "--web.enable-lifecycle") {
		t.Errorf("POST /-/reload without the flag = %d %q, want 403 with a JSON error naming --web.enable-lifecycle", resp.StatusCode, body)
	}
	if hz := getHealthz(t, p.base); len(hz) != 1 {
		t.Errorf("a refused reload changed the pool: %d backends, want 1", len(hz))
	}

	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "backend b after SIGHUP", func() bool { return len(getHealthz(t, p.base)) == 2 })
}

// TestReloadRefusesCrossSiteRequests: a browser's cross-site POST (a form on
// another site) cannot reload probegate; a same-origin one can.
func TestReloadRefusesCrossSiteRequests(t *testing.T) {
	path := filepath.Join(t.TempDir(), "probegate.yml")
	writeConfig(t, path, map[string]string{"a": okBackend(t).URL}, "")
	p := startProbegate(t, "--config.file="+path, "--web.enable-lifecycle")
	for _, c := range []struct {
		site string
		want int
	}{{"cross-site", http.StatusForbidden}, {"same-origin", http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodPost, p.admin+"/-/reload", nil)
		req.Header.Set("Sec-Fetch-Site", c.site)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("POST /-/reload with Sec-Fetch-Site: %s = %d, want %d", c.site, resp.StatusCode, c.want)
		}
	}
}

// TestIdleConnectionsAreClosedAfterTheReadTimeout: a kept-alive connection
// that sends nothing more is closed after --web.read-timeout, and so is one
// that never finishes its request head.
func TestIdleConnectionsAreClosedAfterTheReadTimeout(t *testing.T) {
	p := startProbegate(t, "--backend=a=http://127.0.0.1:1", "--web.read-timeout=500ms")
	addr := strings.TrimPrefix(p.base, "http://")
	for _, c := range []struct{ name, send string }{
		{"idle after a request", "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"unfinished head", "GET /health HTTP/1.1\r\nHost: x\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, c.send); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = io.Copy(io.Discard, conn)
			if elapsed := time.Since(start); err != nil || elapsed > 3*time.Second {
				t.Errorf("connection still open %v after the 500ms read timeout (err %v)", elapsed, err)
			}
		})
	}
}
