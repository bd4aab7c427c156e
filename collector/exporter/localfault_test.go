package exporter

import (
	"net"
	"syscall"
	"testing"

	"github.com/probegate/probegate/collector/health"
)

// TestLocalProbeFailuresAreExported: a probe that failed for a reason of
// probegate's own shows as probegate_probe_failures_total{reason="local"}
// from the first, and the backend stays as it was.
func TestLocalProbeFailuresAreExported(t *testing.T) {
	p := samplePool(t, sampleConfig("a"))
	b := p.Backends()[0]
	recordResult(b, 0, 200, 200)
	for range 4 {
		b.RecordProbe(health.TransportError("", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.EMFILE}))
	}
	compareExposition(t, exportedText(t, newExporter(p), "probegate_probe_failures_total", "probegate_backend_in_service"), `
# TYPE probegate_backend_in_service gauge
probegate_backend_in_service{backend="a"} 1
# TYPE probegate_probe_failures_total counter
probegate_probe_failures_total{backend="a",reason="http_429"} 0
probegate_probe_failures_total{backend="a",reason="http_5xx"} 0
probegate_probe_failures_total{backend="a",reason="local"} 4
probegate_probe_failures_total{backend="a",reason="timeout"} 0
probegate_probe_failures_total{backend="a",reason="transport"} 0
`)
}
