package history

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/probegate/probegate/collector/health"
)

var epoch = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// result is the i-th result of a run: statuses 200 upwards (201, 202, ...
// say which it was), i ms long, i seconds after the epoch.
func result(i int) health.Result {
	r := health.StatusResult(200 + i%100)
	// Milliseconds too, which the ring keeps, and microseconds, which it
	// drops.
	r.Time = epoch.Add(time.Duration(i)*time.Second + time.Duration(i%1000)*time.Millisecond + 7*time.Microsecond)
	r.Duration = time.Duration(i) * time.Millisecond
	return r
}

// TestProbesKeepsTheLastResults: the ring holds the last ProbeLength
// results, oldest first, each as it was added.
func TestProbesKeepsTheLastResults(t *testing.T) {
	for _, added := range []int{0, 1, ProbeLength - 1, ProbeLength, ProbeLength + 1, 135} {
		t.Run(fmt.Sprint(added), func(t *testing.T) {
			var h Probes
			for i := range added {
				h.Add(result(i))
			}
			got := h.Records()
			if len(got) != min(added, ProbeLength) {
				t.Fatalf("%d results kept of %d, want %d", len(got), added, min(added, ProbeLength))
			}
			first := added - len(got)
			for k, rec := range got {
				r := result(first + k)
				if !rec.Time.Equal(r.Time.Truncate(time.Millisecond)) || rec.Duration != r.Duration || rec.StatusCode != r.StatusCode || rec.Class != r.Class || rec.Reason != r.Reason {
					t.Fatalf("result %d = %+v, want the result %d: %+v", k, rec, first+k, r)
				}
			}
		})
	}
}

// TestProbesKeepsAnswersWithoutStatus: kinds without an HTTP status keep
// their answer; a failure its reason and no answer.
func TestProbesKeepsAnswersWithoutStatus(t *testing.T) {
	var h Probes
	h.Add(health.Result{Class: health.ClassFailed, Reason: health.ReasonGRPCNotServing, Status: "NOT_SERVING"})
	h.Add(health.TimeoutResult("no answer"))
	got := h.Records()
	if len(got) != 2 || got[0].Status != "NOT_SERVING" || got[0].Reason != health.ReasonGRPCNotServing ||
		got[1].Reason != health.ReasonTimeout || got[1].Status != "" {
		t.Errorf("records %+v", got)
	}
}

// TestProbesKeepsTheFirstAnswersOfAKind: the history keeps any kind's
// answers, as many distinct ones as it has slots; a further one is kept
// as none, and the ones it has keep their names.
func TestProbesKeepsTheFirstAnswersOfAKind(t *testing.T) {
	var h Probes
	answers := make([]string, statusSlots+1)
	for i := range answers {
		answers[i] = fmt.Sprintf("ANSWER_%d", i)
		h.Add(health.Result{Class: health.ClassRefused, Status: answers[i]})
	}
	h.Add(health.Result{Class: health.ClassOK, Status: answers[0]})
	h.Add(health.StatusResult(200))
	got := h.Records()
	want := append(append(answers[:statusSlots:statusSlots], "", answers[0]), "")
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, rec := range got {
		if rec.Status != want[i] {
			t.Errorf("record %d: status %q, want %q", i, rec.Status, want[i])
		}
	}
}

// TestAddDoesNotAllocate: adding to either ring writes a slot.
func TestAddDoesNotAllocate(t *testing.T) {
	var h Probes
	var l Log
	r := result(1)
	tr := ProbeTransition("a", health.ServedHealthy, health.ServedUnhealthy, epoch, r)
	if allocs := testing.AllocsPerRun(1000, func() { h.Add(r); l.Add(tr) }); allocs != 0 {
		t.Errorf("Add allocates %v times, want 0", allocs)
	}
}

// TestLogKeepsTheLastChangesNewestFirst: the log returns the last
// TransitionLength changes, the latest first.
func TestLogKeepsTheLastChangesNewestFirst(t *testing.T) {
	var l Log
	if got := l.NewestFirst(); len(got) != 0 {
		t.Fatalf("%d changes in an empty log", len(got))
	}
	added := TransitionLength + 7
	for i := range added {
		l.Add(Transition{Time: epoch.Add(time.Duration(i) * time.Second), Backend: fmt.Sprint(i)})
	}
	got := l.NewestFirst()
	if len(got) != TransitionLength {
		t.Fatalf("%d changes kept, want %d", len(got), TransitionLength)
	}
	for i, tr := range got {
		if want := fmt.Sprint(added - 1 - i); tr.Backend != want {
			t.Fatalf("change %d is of %s, want %s", i, tr.Backend, want)
		}
	}
}

// TestTransitionCauses: a probe's change carries its result; any other is
// named by what it did to the overlays.
func TestTransitionCauses(t *testing.T) {
	healthy := health.Served{Machine: health.StateHealthy}
	ejected := health.Served{Machine: health.StateUnhealthy, Overlay: health.OverlayPassiveEjection}
	maintenance := health.Served{Machine: health.StateUnhealthy, Overlay: health.OverlayMaintenance}
	outlier := health.Served{Machine: health.StateHealthy, Overlay: health.OverlayOutlierEjection}
	for _, c := range []struct {
		before, after health.Served
		want          string
	}{
		{healthy, maintenance, CauseMaintenance},
		{maintenance, healthy, CauseMaintenance},
		{ejected, maintenance, CauseMaintenance},
		{healthy, ejected, CauseEjection},
		{ejected, healthy, CauseReadmission},
		{healthy, outlier, ""},
		{outlier, healthy, ""},
		// A passive ejection under an outlier one is no change of its own.
		{outlier, ejected, ""},
		{ejected, outlier, ""},
	} {
		if got := OverlayTransition("a", c.before, c.after, epoch); got.Cause != c.want || got.From != c.before.State() || got.To != c.after.State() {
			t.Errorf("%v -> %v: %+v, want cause %q", c.before, c.after, got, c.want)
		}
	}
	r := health.StatusResult(503)
	got := ProbeTransition("a", health.ServedHealthy, health.ServedUnhealthy, epoch, r)
	if got.Cause != CauseProbe || got.StatusCode != 503 || got.Class != r.Class || got.Reason != r.Reason || !got.Time.Equal(epoch) {
		t.Errorf("probe transition %+v", got)
	}
}

// TestProbesEntryIsPacked: an entry of the ring is 12 bytes, a backend's
// ring of an HTTP probe, which keeps no answers of its own, 736.
func TestProbesEntryIsPacked(t *testing.T) {
	if size := unsafe.Sizeof(entry{}); size != 12 {
		t.Errorf("an entry is %d bytes, want 12", size)
	}
	if size := unsafe.Sizeof(Probes{}); size != 736 {
		t.Errorf("a ring is %d bytes, want 736", size)
	}
}

// TestProbesPackingKeepsEveryField: every class, reason, a status code
// at either end of three digits and the last millisecond of a second come
// back out of an entry as they went in; a code beyond three digits is
// kept as none.
func TestProbesPackingKeepsEveryField(t *testing.T) {
	for class := range health.NumClasses {
		for reason := range health.NumReasons {
			for _, code := range []int{0, 100, 999, 1000} {
				var h Probes
				in := health.Result{Class: class, Reason: reason, StatusCode: code, Status: "SERVING",
					Time: epoch.Add(999 * time.Millisecond), Duration: 3 * time.Millisecond}
				h.Add(in)
				want := Probe{Time: in.Time, Duration: in.Duration, Class: class, Reason: reason, StatusCode: code, Status: "SERVING"}
				if code == 1000 {
					want.StatusCode = 0
				}
				got := h.Records()[0]
				if got.Time.Equal(want.Time) {
					got.Time = want.Time
				}
				if got != want {
					t.Errorf("kept %+v, want %+v", got, want)
				}
			}
		}
	}
}
