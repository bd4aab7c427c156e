package status

import (
	"strconv"
	"strings"
	"time"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/history"
)

// historyCell is one probe result of a backend's history strip; a cell
// without a Title is a slot no result filled yet.
type historyCell struct {
	Class string
	Title string
}

// historyView is a backend's history strip and its availability.
type historyView struct {
	Cells []historyCell
	// Results is how many cells hold a result.
	Results int
	// Availability is the ok share of the results that judge health, as
	// a percentage, or says that none does; AvailabilityTitle says what
	// it counts.
	Availability      string
	AvailabilityTitle string
}

// newHistoryView draws a backend's last results, oldest first, padded to
// history.ProbeLength cells so that every strip has the same width.
func newHistoryView(records []history.Probe) historyView {
	v := historyView{Cells: make([]historyCell, 0, history.ProbeLength), Results: len(records)}
	for range history.ProbeLength - len(records) {
		v.Cells = append(v.Cells, historyCell{Class: "none"})
	}
	var counts [health.NumClasses]int
	for _, r := range records {
		counts[r.Class]++
		v.Cells = append(v.Cells, historyCell{
			Class: r.Class.String(),
			Title: r.Time.UTC().Format(time.RFC3339) + " · " + resultText(r.Reason, r.StatusCode, r.Status) + " · " + human(r.Duration),
		})
	}
	ok, failed, refused := counts[health.ClassOK], counts[health.ClassFailed], counts[health.ClassRefused]
	switch {
	case ok+failed > 0:
		v.Availability = strconv.FormatFloat(100*float64(ok)/float64(ok+failed), 'f', 1, 64) + "% available"
	case refused > 0:
		v.Availability = "no health signal"
	default:
		v.Availability = "not probed yet"
	}
	v.AvailabilityTitle = "ok share of the last " + strconv.Itoa(len(records)) + " probes, refusals left out as they say nothing about health: " +
		strconv.Itoa(ok) + " ok, " + strconv.Itoa(failed) + " failed, " + strconv.Itoa(refused) + " refused"
	return v
}

// resultText describes a result as a person reads it: its HTTP status,
// or the answer of another kind, with the failure reason when the answer
// alone does not say it (a 200 whose body did not match); the reason of a
// result nobody answered.
func resultText(reason health.Reason, statusCode int, status string) string {
	var parts []string
	switch {
	case statusCode != 0:
		parts = append(parts, strconv.Itoa(statusCode))
	case status != "":
		parts = append(parts, status)
	}
	switch reason {
	case health.ReasonNone, health.ReasonHTTP5xx, health.ReasonHTTP429, health.ReasonGRPCNotServing:
		// The status says it.
		if len(parts) == 0 && reason != health.ReasonNone {
			parts = append(parts, reason.String())
		}
	default:
		parts = append(parts, reason.String())
	}
	return strings.Join(parts, " ")
}

// transitionView is one row of "Recent transitions".
type transitionView struct {
	Time, Ago string
	Backend   string
	From, To  string
	// Class is the class of the probe result that caused the change, ""
	// when no probe did; Result is its status or reason, or the cause.
	Class  string
	Result string
}

// causeText says what changed a state when no probe did.
var causeText = map[string]string{
	history.CauseMaintenance: "maintenance",
	history.CauseEjection:    "ejected by fan-out traffic",
	history.CauseReadmission: "readmitted after the passive-health window",
}

func newTransitionViews(transitions []history.Transition, now time.Time) []transitionView {
	out := make([]transitionView, len(transitions))
	for i, t := range transitions {
		v := transitionView{
			Time: t.Time.UTC().Format(time.RFC3339), Ago: human(now.Sub(t.Time)),
			Backend: t.Backend, From: t.From.String(), To: t.To.String(),
		}
		if t.Cause == history.CauseProbe {
			v.Class, v.Result = t.Class.String(), resultText(t.Reason, t.StatusCode, t.Status)
		} else {
			v.Result = causeText[t.Cause]
		}
		out[i] = v
	}
	return out
}
