package e2e

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"path/filepath"
	"testing"
)

// TestRelayedGzipRefusalIsReadable: a backend that answers a fan-out
// with a gzip-encoded 400 reaches the client as a 400 it can read: the
// relayed body says it is gzip, and Go's client decodes it.
func TestRelayedGzipRefusalIsReadable(t *testing.T) {
	const refusal = `{"error":"bad query"}`
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	io.WriteString(zw, refusal)
	zw.Close()
	b := newRecordingBackend(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(zipped.Bytes())
	})
	cfg := filepath.Join(t.TempDir(), "probegate.yml")
	writeFile(t, cfg, "fanout: {enabled: true}\nbackends: [{name: a, url: \""+b.URL+"\"}]\n")
	p := startProbegate(t, "--config.file="+cfg)
	resp, err := http.Get(p.base + "/fanout/q")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusBadRequest || string(body) != refusal {
		t.Errorf("GET /fanout/q = %d %q (%v); want 400 %q", resp.StatusCode, body, err, refusal)
	}
}
