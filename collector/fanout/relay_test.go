package fanout

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"testing"
)

// TestFanoutRelayed4xxKeepsItsContentEncoding: a backend's gzip-encoded
// refusal is relayed as sent and says so, so that the client can read it.
func TestFanoutRelayed4xxKeepsItsContentEncoding(t *testing.T) {
	const refusal = `{"error":"bad query"}`
	zipped := gzipped(t, []byte(refusal))
	rig := setup(t, options{}, serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(zipped)
	}))
	rec := rig.do("GET", "/fanout/q", "", nil)
	if rec.Code != http.StatusBadRequest || rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("relayed %d with Content-Encoding %q; want 400 with gzip", rec.Code, rec.Header().Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatalf("the relayed body is not the gzip it says it is: %v", err)
	}
	if body, err := io.ReadAll(zr); err != nil || string(body) != refusal {
		t.Errorf("decoded relayed body %q, %v; want %q", body, err, refusal)
	}
}
