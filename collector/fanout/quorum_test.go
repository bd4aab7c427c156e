package fanout

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
)

func quorumOf(t *testing.T, s string) config.IntOrPercent {
	t.Helper()
	v, err := config.ParseIntOrPercent(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestQuorumMetAnswersTheMerge: a round with as many contributions as
// fanout.min_contributors asks for is an ordinary partial answer.
func TestQuorumMetAnswersTheMerge(t *testing.T) {
	rig := setup(t, options{fanout: config.Fanout{MinContributors: quorumOf(t, "2")}},
		serve(t, answer(200, `[0]`)), serve(t, answer(503, `down`)), serve(t, answer(200, `[2]`)))
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "2/3", `[0,2]`)
	if got := testutil.ToFloat64(rig.metrics.quorumFailures); got != 0 {
		t.Errorf("quorum failures %v; want 0", got)
	}
}

// TestQuorumMissedAnswers503NamingTheMissing: one contribution short of
// the quorum is a 503 that lists every missing backend and why, with
// X-Backends still set, and is counted.
func TestQuorumMissedAnswers503NamingTheMissing(t *testing.T) {
	rig := setup(t, options{fanout: config.Fanout{MinContributors: quorumOf(t, "50%")}},
		serve(t, answer(200, `[0]`)), serve(t, answer(503, `down`)), serve(t, answer(200, `[2]`)), serve(t, answer(200, `{}`)))
	feed(rig.backend(2), health.StatusResult(503), 3)
	rec := rig.do("GET", "/fanout/q", "", nil)
	// 50% of 4 is 2; only b0 contributed.
	expect(t, rec, 503, "1/4", "")
	var got fanoutError
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("503 body %q is not JSON: %v", rec.Body.String(), err)
	}
	want := []fanoutBackendResult{{Backend: "b1", Reason: "http_5xx", Status: 503}, {Backend: "b3", Reason: "bad_format", Status: 200}, {Backend: "b2", Reason: "unhealthy"}}
	if fmt.Sprint(got.Backends) != fmt.Sprint(want) {
		t.Errorf("503 backends %+v; want %+v", got.Backends, want)
	}
	if !strings.Contains(got.Error, "1 of 4 backends contributed, fewer than the 2 fanout.min_contributors (50%)") {
		t.Errorf("503 error %q does not give the numbers", got.Error)
	}
	if got := testutil.ToFloat64(rig.metrics.quorumFailures); got != 1 {
		t.Errorf("quorum failures %v; want 1", got)
	}
}

// TestQuorumPercentRoundsUp: 34% of 3 backends is 2, not 1.
func TestQuorumPercentRoundsUp(t *testing.T) {
	rig := setup(t, options{fanout: config.Fanout{MinContributors: quorumOf(t, "34%")}},
		serve(t, answer(200, `[0]`)), serve(t, answer(503, `down`)), serve(t, answer(503, `down`)))
	expect(t, rig.do("GET", "/fanout/q", "", nil), 503, "1/3", "")
}

// TestQuorumKeepsTheClientsRefusal: nobody contributed and a backend
// refused the query: the refusal is relayed whatever the quorum, since a
// bad query is not an outage.
func TestQuorumKeepsTheClientsRefusal(t *testing.T) {
	rig := setup(t, options{fanout: config.Fanout{MinContributors: quorumOf(t, "2")}},
		serve(t, answer(400, `{"error":"bad query"}`)), serve(t, answer(503, `down`)))
	expect(t, rig.do("GET", "/fanout/q", "", nil), 400, "0/2", `{"error":"bad query"}`)
	if got := testutil.ToFloat64(rig.metrics.quorumFailures); got != 0 {
		t.Errorf("quorum failures %v; want 0 for a relayed refusal", got)
	}
}

// TestExposeMissingOnEveryAnswer: with expose_missing, the merge, a
// relayed refusal and the 502 all say which backends are missing and why;
// without it, none does. The last round, which /healthz and the status
// page show, says the same in the same words.
func TestExposeMissingOnEveryAnswer(t *testing.T) {
	for _, c := range []struct {
		name     string
		handlers [3]string
		status   int
		missing  string
	}{
		{"merge", [3]string{"200", "503", "200"}, 200, "b1=http_5xx, b2=maintenance"},
		{"relayed", [3]string{"404", "429", "200"}, 404, "b0=http_4xx, b1=http_4xx, b2=maintenance"},
		{"none", [3]string{"502", "500", "200"}, 502, "b0=http_5xx, b1=http_5xx, b2=maintenance"},
		{"all", [3]string{"200", "200", "200"}, 200, "b2=maintenance"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var backends []*backend
			for _, h := range c.handlers {
				status := 0
				fmt.Sscan(h, &status)
				backends = append(backends, serve(t, answer(status, `[1]`)))
			}
			for _, expose := range []bool{true, false} {
				rig := setup(t, options{fanout: config.Fanout{ExposeMissing: expose}}, backends...)
				rig.pool.SetMaintenance([]entries.Entry{{Backend: "b2", Reason: "test"}}, entries.KeptByClock)
				rec := rig.do("GET", "/fanout/q", "", nil)
				if rec.Code != c.status {
					t.Errorf("status %d; want %d", rec.Code, c.status)
				}
				got, present := rec.Header()["X-Backends-Missing"]
				switch {
				case expose && (len(got) != 1 || got[0] != c.missing):
					t.Errorf("X-Backends-Missing %q; want %q", got, c.missing)
				case !expose && present:
					t.Errorf("X-Backends-Missing %q without expose_missing", got)
				}
				// /healthz and the status page read the round in the
				// header's words.
				var words []string
				for _, b := range rig.fanout.LastRound().Backends {
					if b.Outcome != OutcomeContributed {
						words = append(words, b.Name+"="+b.Reason.String())
					}
				}
				if round := strings.Join(words, ", "); round != c.missing {
					t.Errorf("the last round says %q; want the header's %q", round, c.missing)
				}
			}
		})
	}
}

// TestMissingHeaderIsBounded: a pool whose every backend is missing gets
// a header of whole entries within 4 KiB.
func TestMissingHeaderIsBounded(t *testing.T) {
	var missing []missingBackend
	for i := range 1000 {
		missing = append(missing, missingBackend{name: fmt.Sprintf("backend-%04d", i), reason: MissingTransport})
	}
	h := missingHeader(missing)
	if len(h) > maxMissingHeaderBytes || len(h) < maxMissingHeaderBytes-len("backend-0000=transport, ") {
		t.Fatalf("header of %d bytes; want just under %d", len(h), maxMissingHeaderBytes)
	}
	entries := strings.Split(h, ", ")
	for i, e := range entries {
		if want := fmt.Sprintf("backend-%04d=transport", i); e != want {
			t.Fatalf("entry %d %q; want %q", i, e, want)
		}
	}
	if got := missingHeader(missing[:2]); got != "backend-0000=transport, backend-0001=transport" {
		t.Errorf("two entries: %q", got)
	}
}

// TestPartialForMaintenanceOnlyIsCounted: a partial round whose only
// missing backend is in maintenance is counted apart; one also missing a
// failed backend is not.
func TestPartialForMaintenanceOnlyIsCounted(t *testing.T) {
	failing := serve(t, answer(200, `[1]`))
	rig := setup(t, options{}, serve(t, answer(200, `[0]`)), failing, serve(t, answer(200, `[2]`)))
	rig.pool.SetMaintenance([]entries.Entry{{Backend: "b2", Reason: "test"}}, entries.KeptByClock)
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "2/3", `[0,1]`)
	failing.Close()
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/3", `[0]`)
	partial, maintenance := testutil.ToFloat64(rig.metrics.Partial), testutil.ToFloat64(rig.metrics.partialMaintenance)
	if partial != 2 || maintenance != 1 {
		t.Errorf("partial %v, for maintenance only %v; want 2 and 1", partial, maintenance)
	}
}
