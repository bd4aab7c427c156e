package collector

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
// (probe.FailureReasons); the exporter only reads it, so a new kind or
// reason is written once. It is built once per exporter.
type failureSeries struct {
	// shapes are the reasons pre-initialised for each kind, matching the
	// body or not: a handful, searched in order, which is cheaper per
	// backend than hashing the kind's name.
	shapes []shapeReasons
	// every are the reasons every backend has whatever its kind: those of
	// the default kind's plain probe, which every backend had before there
	// were other kinds, so that a dashboard's sum by reason sees one set.
	every [health.NumReasons]bool
}

// shapeReasons are the reasons of one kind, matching the body or not.
type shapeReasons struct {
	kind        string
	matchesBody bool
	reasons     [health.NumReasons]bool
}

func newFailureSeries() failureSeries {
	var f failureSeries
	for _, r := range probe.FailureReasons((config.HealthProbe{}).EffectiveKind(), false) {
		f.every[r] = true
	}
	for _, kind := range config.Kinds() {
		for _, body := range []bool{false, true} {
			s := shapeReasons{kind: kind, matchesBody: body, reasons: f.every}
			for _, r := range probe.FailureReasons(kind, body) {
				s.reasons[r] = true
			}
			f.shapes = append(f.shapes, s)
		}
	}
	return f
}

// of is the reasons whose series b has: those its kind can fail for, and
// those it failed for. A reason no kind lists (a local failure, which is
// probegate's own and rare) is shown from its first on, so that it costs
// no series per backend until then.
func (f failureSeries) of(b *pool.BackendSnapshot) [health.NumReasons]bool {
	out := f.every
	for i := range f.shapes {
		if s := &f.shapes[i]; s.kind == b.ProbeKind && s.matchesBody == b.ProbeMatchesBody {
			out = s.reasons
			break
		}
	}
	for r, n := range b.Failures {
		if n > 0 {
			out[r] = true
		}
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
			if slices.Contains(probe.FailureReasons(kind, true), r) {
				listed = append(listed, r.String())
				break
			}
		}
	}
	return "Probes of class failed per backend, by reason (" + strings.Join(listed, ", ") +
		"; local: probegate out of descriptors, ports or memory, which changes no state)."
}
