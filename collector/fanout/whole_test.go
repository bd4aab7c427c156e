package fanout

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/proxyheader"
)

// sixAnswering are six backends b0…b5 that all answer [i].
func sixAnswering(t *testing.T) []*backend {
	t.Helper()
	backends := make([]*backend, 6)
	for i := range backends {
		backends[i] = serve(t, answer(200, fmt.Sprintf("[%d]", i)))
	}
	return backends
}

// noQuorumBody decodes a 503's JSON error.
func noQuorumBody(t *testing.T, body string) fanoutError {
	t.Helper()
	var e fanoutError
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("503 body %q is not JSON: %v", body, err)
	}
	return e
}

// TestMinContributorsAllDemandsEveryConfiguredBackend: all means every
// configured backend, the unhealthy and the one in maintenance included:
// a round that could only ask five of six is a 503 that names the missing
// one and why, with X-Backends set, and is counted. No header can
// otherwise make a partial round fail.
func TestMinContributorsAllDemandsEveryConfiguredBackend(t *testing.T) {
	all := http.Header{proxyheader.MinContributors: {"all"}}
	for _, c := range []struct {
		name    string
		takeOut func(r *rig)
		reason  string
	}{
		{"unhealthy", func(r *rig) { feed(r.backend(4), health.StatusResult(503), 3) }, "unhealthy"},
		{"maintenance", func(r *rig) {
			r.pool.SetMaintenance([]entries.Entry{{Backend: "b4", Reason: "test"}}, entries.KeptByClock)
		}, "maintenance"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := setup(t, options{fanout: config.Fanout{ExposeMissing: true}}, sixAnswering(t)...)
			c.takeOut(r)
			rec := r.do("GET", "/fanout/q", "", all)
			expect(t, rec, 503, "5/6", "")
			e := noQuorumBody(t, rec.Body.String())
			if want := []fanoutBackendResult{{Backend: "b4", Reason: c.reason}}; fmt.Sprint(e.Backends) != fmt.Sprint(want) {
				t.Errorf("503 backends %+v; want %+v", e.Backends, want)
			}
			if !strings.Contains(e.Error, "5 of 6 backends contributed") || !strings.Contains(e.Error, proxyheader.MinContributors) {
				t.Errorf("503 error %q; want the numbers and the header", e.Error)
			}
			if got := rec.Header().Get("X-Backends-Missing"); got != "b4="+c.reason {
				t.Errorf("X-Backends-Missing %q; want b4=%s", got, c.reason)
			}
			if got := testutil.ToFloat64(r.metrics.quorumFailures); got != 1 {
				t.Errorf("quorum failures %v; want 1", got)
			}
			// Without the header the same round is an ordinary partial
			// answer.
			expect(t, r.do("GET", "/fanout/q", "", nil), 200, "5/6", `[0,1,2,3,5]`)
		})
	}
}

// TestMinContributorsNIsCappedAtTheConfigured: N is capped at the
// configured backends, not the selected ones, so six demanded of six
// configured fails while one is out of service; more than six demands
// six.
func TestMinContributorsNIsCappedAtTheConfigured(t *testing.T) {
	r := setup(t, options{}, sixAnswering(t)...)
	expect(t, r.do("GET", "/fanout/q", "", http.Header{proxyheader.MinContributors: {"99"}}), 200, "6/6", `[0,1,2,3,4,5]`)
	feed(r.backend(4), health.StatusResult(503), 3)
	for _, n := range []string{"6", "99"} {
		rec := r.do("GET", "/fanout/q", "", http.Header{proxyheader.MinContributors: {n}})
		expect(t, rec, 503, "5/6", "")
		if e := noQuorumBody(t, rec.Body.String()); !strings.Contains(e.Error, "fewer than the 6 the Probegate-Min-Contributors header asks for") {
			t.Errorf("N=%s: 503 error %q; want six asked for by the header", n, e.Error)
		}
	}
	expect(t, r.do("GET", "/fanout/q", "", http.Header{proxyheader.MinContributors: {"5"}}), 200, "5/6", `[0,1,2,3,5]`)
}

// TestNoMissingHeaderOnAWholeRound: with expose_missing, a round that
// misses nobody carries no X-Backends-Missing at all, not an empty one.
func TestNoMissingHeaderOnAWholeRound(t *testing.T) {
	r := setup(t, options{fanout: config.Fanout{ExposeMissing: true}}, serve(t, answer(200, `[0]`)), serve(t, answer(200, `[1]`)))
	rec := r.do("GET", "/fanout/q", "", nil)
	expect(t, rec, 200, "2/2", `[0,1]`)
	if got, present := rec.Header()["X-Backends-Missing"]; present {
		t.Errorf("X-Backends-Missing %q on a whole round; want none", got)
	}
}
