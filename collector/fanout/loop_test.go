package fanout

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/probegate/probegate/config"
)

// TestViaHops: probegate hops are the entries with its comment, and this
// replica's entry is recognised with the comment or without it.
func TestViaHops(t *testing.T) {
	for _, c := range []struct {
		via  []string
		hops int
		self bool
	}{
		{nil, 0, false},
		{[]string{"1.1 nginx"}, 0, false},
		{[]string{"1.1 other:9797 (probegate)"}, 1, false},
		{[]string{"1.1 me:9797 (probegate)"}, 1, true},
		{[]string{"1.0 fred, 1.1 a (probegate)", "HTTP/2 b (probegate), 1.1 me:9797 (Apache/2.4)"}, 2, false},
		// A comment with a comma does not split an entry, and another
		// proxy's comment is no probegate hop.
		{[]string{"1.1 x (probegate, or so it says), 1.1 me:9797 (probegate)"}, 1, true},
		{[]string{"1.1 me:9797 (not probegate)"}, 0, false},
		// A proxy on the way may strip comments: this replica's entry
		// is still its own.
		{[]string{"1.1 me:9797"}, 0, true},
		{[]string{"1.0 fred, HTTP/1.1 me:9797 , 1.1 a (probegate)"}, 1, true},
		{[]string{"1.1 me:97970"}, 0, false},
		{[]string{" , 1.1 a (probegate) ,, 1.1 b   (probegate) "}, 2, false},
	} {
		hops, self := viaHops(c.via, "me:9797")
		if hops != c.hops || self != c.self {
			t.Errorf("viaHops(%q) = %d, %v; want %d, %v", c.via, hops, self, c.hops, c.self)
		}
	}
}

// TestViaIsForwardedWithThisHop: every backend request carries the
// client's Via with this replica's hop appended.
func TestViaIsForwardedWithThisHop(t *testing.T) {
	b := serve(t, answer(200, `[1]`))
	rig := setup(t, options{fanout: config.Fanout{MaxHops: 3}}, b)
	rig.fanout.SetReplicaName("me:9797")
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/1", `[1]`)
	if got := b.lastRequest().header.Values("Via"); len(got) != 1 || got[0] != "1.1 me:9797 (probegate)" {
		t.Errorf("Via %q; want this hop alone", got)
	}
	expect(t, rig.do("GET", "/fanout/q", "", http.Header{"Via": {"1.0 fred", "1.1 a (probegate)"}}), 200, "1/1", `[1]`)
	if got := b.lastRequest().header.Values("Via"); len(got) != 1 || got[0] != "1.0 fred, 1.1 a (probegate), 1.1 me:9797 (probegate)" {
		t.Errorf("Via %q; want the client's and this hop", got)
	}
}

// TestLoopIsRefused: a request that has been through this replica, or
// through max_hops probegates, gets 508, asks no backend, and is counted
// as a request and as a loop.
func TestLoopIsRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		via     string
		refused bool
	}{
		{"self", "1.1 me:9797 (probegate)", true},
		{"max hops", "1.1 a (probegate), 1.1 b (probegate)", true},
		{"one hop short", "1.1 a (probegate), 1.1 b (nginx)", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := serve(t, answer(200, `[1]`))
			rig := setup(t, options{fanout: config.Fanout{MaxHops: 2}}, b)
			rig.fanout.SetReplicaName("me:9797")
			rec := rig.do("GET", "/fanout/q", "", http.Header{"Via": {c.via}})
			loops := testutil.ToFloat64(rig.metrics.rejectedLoop)
			if !c.refused {
				expect(t, rec, 200, "1/1", `[1]`)
				if loops != 0 || b.hits.Load() != 1 {
					t.Errorf("loops %v, backend hits %d; want 0 and 1", loops, b.hits.Load())
				}
				return
			}
			expect(t, rec, http.StatusLoopDetected, "0/1", "")
			if b.hits.Load() != 0 {
				t.Errorf("a looping request reached the backend %d times", b.hits.Load())
			}
			if requests := testutil.ToFloat64(rig.metrics.Requests); loops != 1 || requests != 1 {
				t.Errorf("loops %v, requests %v; want 1 and 1", loops, requests)
			}
			if got := testutil.ToFloat64(rig.metrics.rejectedMaxConcurrent); got != 0 {
				t.Errorf("max_concurrent refusals %v; want 0", got)
			}
		})
	}
}

// TestRingOfFanoutsStopsAtTheFirstRepeat: two fan-outs that are each
// other's backend, with a real backend each, cost one round apiece for a
// client request: the second arrival at the first is refused.
func TestRingOfFanoutsStopsAtTheFirstRepeat(t *testing.T) {
	real := serve(t, answer(200, `[1]`))
	var handlers [2]http.Handler
	var servers [2]*httptest.Server
	for i := range servers {
		servers[i] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" {
				return
			}
			handlers[i].ServeHTTP(w, r)
		}))
		t.Cleanup(servers[i].Close)
	}
	for i, name := range []string{"a", "b"} {
		other := &backend{Server: servers[1-i]}
		rig := setup(t, options{fanout: config.Fanout{MaxHops: 3}, urls: map[int]string{0: other.URL + Path}}, other, real)
		rig.fanout.SetReplicaName(name)
		handlers[i] = rig.fanout
	}
	resp, err := http.Get(servers[0].URL + "/fanout/q")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// b contributed what it got from the real backend; a refused b's
	// request.
	if resp.StatusCode != 200 || resp.Header.Get("X-Backends") != "2/2" {
		t.Errorf("status %d, X-Backends %q; want 200 and 2/2", resp.StatusCode, resp.Header.Get("X-Backends"))
	}
	if got := real.hits.Load(); got != 2 {
		t.Errorf("the real backend was asked %d times; want 2, one round at each fan-out", got)
	}
}
