package web

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// scrapeText is an exposition shaped like the metrics of n backends: a
// few dozen series each, in the text format.
func scrapeText(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		for _, reason := range []string{"timeout", "transport", "http_5xx", "http_429"} {
			fmt.Fprintf(&b, "probegate_probe_failures_total{backend=\"backend-%05d\",reason=%q} %d\n", i, reason, i*7%13)
		}
		for _, state := range []string{"unknown", "healthy", "unhealthy", "probe_unsupported", "maintenance"} {
			fmt.Fprintf(&b, "probegate_backend_state{backend=\"backend-%05d\",state=%q} %d\n", i, state, (i+len(state))%2)
		}
		fmt.Fprintf(&b, "probegate_backend_last_probe_timestamp_seconds{backend=\"backend-%05d\"} 1.7%08d9e+09\n", i, i*7919%100000000)
	}
	return b.Bytes()
}

// TestCompressScrapesAnswersGzipWhenAsked: the answer is gzip when the
// scrape asks for it, and decompresses to the metrics' own; a scrape that
// does not ask gets the metrics' answer as is.
func TestCompressScrapesAnswersGzipWhenAsked(t *testing.T) {
	text := scrapeText(100)
	h, err := CompressScrapes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(text)
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, encoding := range []string{"gzip", "", "identity"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		h.ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		if got := rec.Header().Get("Content-Encoding"); got != map[string]string{"gzip": "gzip"}[encoding] {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q", encoding, got)
		}
		if encoding == "gzip" {
			zr, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatalf("Accept-Encoding gzip: %v", err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				t.Fatalf("Accept-Encoding gzip: %v", err)
			}
		}
		if !bytes.Equal(body, text) {
			t.Errorf("Accept-Encoding %q: the answer is not the metrics' (%d bytes; want %d)", encoding, len(body), len(text))
		}
	}
}

// BenchmarkCompressScrapes compares compressing the metrics of 10,000
// backends as promhttp does (gzip's default level) with CompressScrapes.
func BenchmarkCompressScrapes(b *testing.B) {
	text := scrapeText(10_000)
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(text) })
	compressed, err := CompressScrapes(metrics)
	if err != nil {
		b.Fatal(err)
	}
	promhttpLevel := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		zw := gzip.NewWriter(w)
		zw.Write(text)
		zw.Close()
	})
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"promhttp-default-level", promhttpLevel}, {"CompressScrapes", compressed}} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/metrics", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			var size int
			for b.Loop() {
				rec := httptest.NewRecorder()
				c.h.ServeHTTP(rec, req)
				size = rec.Body.Len()
			}
			b.SetBytes(int64(len(text)))
			b.ReportMetric(float64(size), "compressed-bytes")
		})
	}
}
