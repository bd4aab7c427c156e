package exporter

import (
	"slices"
	"strings"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/collector/probe"
	"github.com/probegate/probegate/config"
)

// failureSeries says which probegate_probe_failures_total series a
// backend has, by its probe's kind and whether the probe matches the
// body. What a kind can fail for is its row of the kind table
// (probe.KindFailureReasons); the exporter only reads it, so a new kind or
// reason is written once. It is built once per exporter.
type failureSeries struct {
	// shapes are the reasons pre-initialised for each kind, matching the
	// body or not: a handful, searched in order, which is cheaper per
	// backend than hashing the kind's name.
	shapes []shapeReasons
	// every are the reasons every backend has whatever its kind
	// (alwaysShown).
	every [health.NumReasons]bool
}

// alwaysShown are the reasons whose series every backend has whatever its
// kind, so that a dashboard's sum by reason sees one set: the four every
// backend had before there were other kinds. They are a fixed list, not
// the default kind's row, so that a reason added to the http probe does
// not add a series to every tcp and grpc backend.
var alwaysShown = [...]health.Reason{health.ReasonTimeout, health.ReasonTransport, health.ReasonHTTP5xx, health.ReasonHTTP429}

// shapeReasons are the reasons of one kind, matching the body or not.
type shapeReasons struct {
	kind        string
	matchesBody bool
	reasons     [health.NumReasons]bool
}

func newFailureSeries() failureSeries {
	return failureSeriesOf(probe.KindFailureReasons)
}

// failureSeriesOf is newFailureSeries from the kind table's rows, as
// kindReasons reads them.
func failureSeriesOf(kindReasons func(kind string, matchesBody bool) []health.Reason) failureSeries {
	var f failureSeries
	for _, r := range alwaysShown {
		f.every[r] = true
	}
	for _, kind := range config.Kinds() {
		for _, body := range []bool{false, true} {
			s := shapeReasons{kind: kind, matchesBody: body, reasons: f.every}
			for _, r := range kindReasons(kind, body) {
				s.reasons[r] = true
			}
			f.shapes = append(f.shapes, s)
		}
	}
	return f
}

// of is the reasons whose series b has: those its kind can fail for and,
// once b had one, local failures, which are probegate's own and rare, so
// that they cost no series per backend until then. Only local is shown
// by its count: the others follow the kind's row, so that a backend's
// series are known from its configuration.
func (f failureSeries) of(b *pool.BackendSnapshot) [health.NumReasons]bool {
	out := f.every
	for i := range f.shapes {
		if s := &f.shapes[i]; s.kind == b.ProbeKind && s.matchesBody == b.ProbeMatchesBody {
			out = s.reasons
			break
		}
	}
	if b.Failures[health.ReasonLocal] > 0 {
		out[health.ReasonLocal] = true
	}
	return out
}

// failuresHelp is the help of probegate_probe_failures_total: every
// reason some kind can fail for, in health.FailureReasons' order, and
// what a local failure is.
func failuresHelp() string {
	var listed []string
	for _, r := range health.FailureReasons() {
		for _, kind := range config.Kinds() {
			if slices.Contains(probe.KindFailureReasons(kind, true), r) {
				listed = append(listed, r.String())
				break
			}
		}
	}
	return "Probes of class failed per backend, by reason (" + strings.Join(listed, ", ") +
		"; local: probegate out of descriptors, ports or memory, which changes no state)."
}
