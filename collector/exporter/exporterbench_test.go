package exporter

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// exporterBenchBackends is the pool size of the /metrics budget
// (docs/design.md, "Budgets"): at most 1.5 µs per exported series.
const exporterBenchBackends = 10000

// exporterBenchPool is a pool of exporterBenchBackends backends spread over
// the four states, configured out of name order.
func exporterBenchPool(b *testing.B) *pool.Pool {
	b.Helper()
	names := make([]string, exporterBenchBackends)
	for i := range names {
		// Config order is not name order: the exposition sorts by
		// name, so the benchmark pays for putting them in order.
		names[i] = fmt.Sprintf("backend-%05d", i*7919%exporterBenchBackends)
	}
	p := samplePool(b, sampleConfig(names...))
	for i, backend := range p.Backends() {
		switch i % 4 {
		case 0: // unknown: never probed
		case 1:
			recordResult(backend, 0, 200)
		case 2:
			recordResult(backend, 0, 200, 503, 503, 503)
		case 3:
			recordResult(backend, 0, 404)
		}
	}
	return p
}

// exporterBenchSeries counts the series g gathers.
func exporterBenchSeries(b *testing.B, g prometheus.Gatherer) int {
	b.Helper()
	families, err := g.Gather()
	if err != nil {
		b.Fatalf("gather: %v", err)
	}
	series := 0
	for _, f := range families {
		series += len(f.GetMetric())
	}
	return series
}

// exporterBenchExposed counts the series g shows on /metrics, a classic
// histogram's buckets, sum and count each one.
func exporterBenchExposed(b *testing.B, g prometheus.Gatherer) int {
	b.Helper()
	families, err := g.Gather()
	if err != nil {
		b.Fatalf("gather: %v", err)
	}
	return countExposed(families)
}

// exporterBenchDiscard is a ResponseWriter that throws the body away, so
// the benchmark measures producing the exposition, not buffering it.
type exporterBenchDiscard struct{ header http.Header }

func (d *exporterBenchDiscard) Header() http.Header         { return d.header }
func (d *exporterBenchDiscard) Write(p []byte) (int, error) { return len(p), nil }
func (d *exporterBenchDiscard) WriteHeader(int)             {}

// exporterBenchPrometheusAccept is the Accept header of a Prometheus 3
// scrape with default settings.
const exporterBenchPrometheusAccept = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5," +
	"application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3," +
	"text/plain;version=0.0.4;q=0.2,*/*;q=0.1"

// BenchmarkExporter10000 measures a scrape of 10,000 backends, reporting
// ns/series against the 1.5 µs budget. "gatherer" is NewGatherer alone
// and "handler-*" the whole /metrics handler over it as probegate serves
// it, without and with gzip (Prometheus asks for gzip by default);
// "registry-*" is the exporter registered in a plain registry, for
// comparison.
func BenchmarkExporter10000(b *testing.B) {
	p := exporterBenchPool(b)
	direct := NewGatherer(p, prometheus.NewRegistry())
	registry := prometheus.NewRegistry()
	registry.MustRegister(newExporter(p))
	series := exporterBenchSeries(b, direct)
	if viaRegistry := exporterBenchSeries(b, registry); viaRegistry != series {
		b.Fatalf("registry gathers %d series, the gatherer %d", viaRegistry, series)
	}

	run := func(name string, scrape func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				scrape(b)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(series), "ns/series")
			b.ReportMetric(float64(series), "series")
		})
	}
	gather := func(g prometheus.Gatherer) func(*testing.B) {
		return func(b *testing.B) {
			if _, err := g.Gather(); err != nil {
				b.Fatal(err)
			}
		}
	}
	serve := func(g prometheus.Gatherer, encoding string) func(*testing.B) {
		handler := promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", exporterBenchPrometheusAccept)
		req.Header.Set("Accept-Encoding", encoding)
		return func(*testing.B) {
			handler.ServeHTTP(&exporterBenchDiscard{header: http.Header{}}, req)
		}
	}

	run("gatherer", gather(direct))
	run("handler-identity", serve(direct, "identity"))
	run("handler-gzip", serve(direct, "gzip"))
	run("registry-gather", gather(registry))
	run("registry-handler-gzip", serve(registry, "gzip"))
}

// BenchmarkExporterSeriesPerBackend reports the series a backend adds to
// /metrics (http probes, probed once): with every optional feature off,
// with fan-out on, and with fan-out, passive health and maintenance on.
// It fails when the first is over the budget of 25, which must leave room
// for what is added later.
func BenchmarkExporterSeriesPerBackend(b *testing.B) {
	const backends = 1000
	names := make([]string, backends)
	for i := range names {
		names[i] = fmt.Sprintf("backend-%04d", i)
	}
	perBackend := func(cfg *config.Config, maintenance bool) float64 {
		p := leanPool(b, cfg)
		if maintenance {
			p.SetMaintenance(nil, entries.KeptByClock)
		}
		for _, backend := range p.Backends() {
			recordResult(backend, 0, 200)
		}
		empty := leanPool(b, testConfig())
		emptySeries := exporterBenchExposed(b, NewGatherer(empty, nil))
		return float64(exporterBenchExposed(b, NewGatherer(p, nil))-emptySeries) / backends
	}
	for range b.N {
		lean := testConfig(namedBackends(names...)...)
		withFanout := testConfig(namedBackends(names...)...)
		withFanout.Fanout.Enabled = true
		off := perBackend(lean, false)
		fanout := perBackend(withFanout, false)
		all := perBackend(sampleConfig(names...), true)
		b.ReportMetric(off, "series/backend")
		b.ReportMetric(fanout, "fanout-series/backend")
		b.ReportMetric(all, "all-features-series/backend")
		b.ReportMetric(0, "ns/op")
		b.Logf("series per backend: %.0f with fan-out, passive health and maintenance off (budget %d), %.0f with fan-out on, %.0f with all three on",
			off, maxSeriesPerBackend, fanout, all)
		if off > maxSeriesPerBackend {
			b.Errorf("%.0f series per backend with fan-out off, over the budget of %d", off, maxSeriesPerBackend)
		}
	}
}
