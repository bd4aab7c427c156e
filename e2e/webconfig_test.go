package e2e

import (
	"crypto/tls"
	"net/http"
	"testing"
	"time"
)

// TestWebConfigServesTLSWithBasicAuth runs probegate with a real
// exporter-toolkit web config: HTTPS only, and /metrics behind basic auth.
func TestWebConfigServesTLSWithBasicAuth(t *testing.T) {
	webConfig, pki := webConfigWithAuth(t)
	addr := freeAddr(t)
	launchProbegate(t, addr, "--web.config.file="+webConfig, "--backend=a=http://127.0.0.1:1")
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.CAPool}}}

	waitFor(t, 10*time.Second, "probegate over TLS", func() bool {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		req.SetBasicAuth("operator", "s3cret")
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	resp, err := client.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without credentials: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	req.SetBasicAuth("operator", "wrong")
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics with a wrong password: %d, want 401", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP served /metrics although the web config demands TLS")
		}
	}
}
