package exporter

import (
	"net"
	"regexp"
	"slices"
	"syscall"
	"testing"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// TestFailureSeriesOfEachKind: the probe_failures_total series a backend
// has from the start are the four every backend has always had, and its
// kind's own: body_mismatch for an http probe that matches the body,
// grpc_not_serving for a grpc one. local shows from the first on. The
// help names every reason. These are the series and help /metrics has
// always shown, whatever table they are derived from.
func TestFailureSeriesOfEachKind(t *testing.T) {
	every := []string{"http_429", "http_5xx", "timeout", "transport"}
	for _, c := range []struct {
		kind  string
		body  string
		extra []string
	}{
		{kind: config.KindHTTP},
		{kind: config.KindHTTP, body: "up", extra: []string{"body_mismatch"}},
		{kind: config.KindTCP},
		{kind: config.KindGRPC, extra: []string{"grpc_not_serving"}},
		{kind: config.KindGRPC, body: "up", extra: []string{"grpc_not_serving"}},
	} {
		cfg := testConfig(namedBackends("a")...)
		cfg.HealthProbe.Kind, cfg.HealthProbe.ExpectBodyRegexp = c.kind, c.body
		p := leanPool(t, cfg)
		want := append(slices.Clone(every), c.extra...)
		slices.Sort(want)
		if got := failureLabels(t, newExporter(p)); !slices.Equal(got, want) {
			t.Errorf("kind %s, body %q: reasons %v, want %v", c.kind, c.body, got, want)
		}
		p.Backends()[0].RecordProbe(health.TransportError("", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.EMFILE}))
		want = append(want, "local")
		slices.Sort(want)
		if got := failureLabels(t, newExporter(p)); !slices.Equal(got, want) {
			t.Errorf("kind %s, body %q, after a local failure: reasons %v, want %v", c.kind, c.body, got, want)
		}
	}
	help := "Probes of class failed per backend, by reason (timeout, transport, http_5xx, http_429, body_mismatch, " +
		"grpc_not_serving; local: probegate out of descriptors, ports or memory, which changes no state)."
	if got := newExporter(leanPool(t, testConfig(namedBackends("a")...))).families[familyProbeFailures].help; *got != help {
		t.Errorf("help\n%s\nwant\n%s", *got, help)
	}
}

// TestFailureSeriesFollowTheKindRow: a reason outside a backend's kind
// row gets no series even once counted: only local is shown by its count,
// so a backend's series are known from its configuration.
func TestFailureSeriesFollowTheKindRow(t *testing.T) {
	cfg := testConfig(namedBackends("a")...)
	cfg.HealthProbe.Kind = config.KindTCP
	p := leanPool(t, cfg)
	for _, r := range []health.Reason{health.ReasonBodyMismatch, health.ReasonGRPCNotServing} {
		p.Backends()[0].RecordProbe(health.Result{Class: health.ClassFailed, Reason: r})
	}
	want := []string{"http_429", "http_5xx", "timeout", "transport"}
	if got := failureLabels(t, newExporter(p)); !slices.Equal(got, want) {
		t.Errorf("tcp backend that counted body_mismatch and grpc_not_serving: reasons %v, want %v", got, want)
	}
}

// TestFailureSeriesFloorIsFixed: the four series every backend has are a
// fixed list, not the http row: a reason the http row gains is an http
// backend's series, not a tcp or grpc one's.
func TestFailureSeriesFloorIsFixed(t *testing.T) {
	rows := map[string][]health.Reason{
		config.KindHTTP: {health.ReasonTimeout, health.ReasonTransport, health.ReasonHTTP5xx, health.ReasonHTTP429, health.ReasonBodyMismatch},
		config.KindTCP:  {health.ReasonTimeout},
		config.KindGRPC: {health.ReasonGRPCNotServing},
	}
	f := failureSeriesOf(func(kind string, _ bool) []health.Reason { return rows[kind] })
	floor := []health.Reason{health.ReasonTimeout, health.ReasonTransport, health.ReasonHTTP5xx, health.ReasonHTTP429}
	for kind, row := range rows {
		got := f.of(&pool.BackendSnapshot{ProbeKind: kind})
		for _, r := range health.FailureReasons() {
			if want := slices.Contains(floor, r) || slices.Contains(row, r); got[r] != want {
				t.Errorf("kind %s: series of %s %v, want %v", kind, r, got[r], want)
			}
		}
	}
}

// failureLabels are the reason labels of the probe_failures_total
// series c exports, sorted.
func failureLabels(t *testing.T, c *exporter) []string {
	t.Helper()
	var reasons []string
	for _, m := range reasonLabel.FindAllStringSubmatch(exportedText(t, c, "probegate_probe_failures_total"), -1) {
		reasons = append(reasons, m[1])
	}
	slices.Sort(reasons)
	return reasons
}

var reasonLabel = regexp.MustCompile(`reason="([^"]+)"`)
