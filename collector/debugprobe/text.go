package debugprobe

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"go.yaml.in/yaml/v3"
)

// text is the report as blackbox_exporter's /probe?debug=true answers:
// the probe's log lines, the series it would have set, then (beyond
// blackbox) the answer's head and body, and the probe's configuration.
// Every secret is hidden in all of it.
func (rep *report) text() string {
	var out bytes.Buffer
	out.WriteString("Logs for the probe:\n")
	logger := log.NewLogfmtLogger(&out)
	for _, e := range rep.events {
		level := "info"
		keyvals := e.keyvals
		if len(keyvals) >= 2 && keyvals[0] == "level" {
			level, keyvals = fmt.Sprint(keyvals[1]), keyvals[2:]
		}
		logger.Log(append([]any{"ts", e.at.UTC().Format(time.RFC3339Nano), "level", level, "backend", rep.Backend, "msg", e.msg}, keyvals...)...)
	}

	out.WriteString("\n\nMetrics that would have been returned:\n")
	out.WriteString(rep.metricsText())

	if resp := rep.Response; resp != nil {
		fmt.Fprintf(&out, "\n\nResponse:\n%s %s\n", resp.Proto, resp.Status)
		names := make([]string, 0, len(resp.Header))
		for name := range resp.Header {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			for _, v := range resp.Header[name] {
				fmt.Fprintf(&out, "%s: %s\n", name, v)
			}
		}
		fmt.Fprintf(&out, "\n%s\n", resp.Body)
		if resp.BodyTruncated {
			fmt.Fprintf(&out, "[the first %d bytes of %d read]\n", bodyBytes, resp.BodyBytesRead)
		}
	}

	out.WriteString("\n\nProbe configuration:\n")
	probe := rep.probe
	if len(probe.Headers) > 0 {
		probe.Headers = make(map[string]string, len(rep.probe.Headers))
		for name, value := range rep.probe.Headers {
			if sensitiveHeader(name) {
				value = redactedValue
			}
			probe.Headers[name] = value
		}
	}
	if config, err := yaml.Marshal(probe); err == nil {
		out.Write(config)
	}
	return rep.redact.text(out.String())
}

// metricsText is the per-backend series the probe would have set, in the
// text exposition format.
func (rep *report) metricsText() string {
	reg := prometheus.NewRegistry()
	backend := prometheus.Labels{"backend": rep.Backend}
	gauge := func(name, help string, value float64) {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: backend})
		g.Set(value)
		reg.MustRegister(g)
	}
	gauge("probegate_backend_last_probe_status_code", "HTTP status code of the probe; 0 when it got no HTTP answer.", float64(rep.Status))
	gauge("probegate_backend_last_probe_duration_seconds", "Duration of the probe.", rep.duration.Seconds())
	if !rep.certExpiry.IsZero() {
		gauge("probegate_backend_tls_cert_expiry_timestamp_seconds", "Unix time the earliest certificate of the chain the backend presented expires.",
			float64(rep.certExpiry.Unix()))
	}
	families, err := reg.Gather()
	if err != nil {
		return ""
	}
	var out strings.Builder
	for _, f := range families {
		expfmt.MetricFamilyToText(&out, f)
	}
	return out.String()
}
