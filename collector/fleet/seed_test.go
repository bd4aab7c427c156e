package fleet

import (
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
)

var thresholds = health.Thresholds{Failures: 3, Successes: 2}

// verdict is a verdict of the seed tables.
func verdict(replica string, state health.State, verified, reachable bool, since time.Time) Vantage {
	return Vantage{Replica: replica, Verdict: Verdict{State: state, Verified: verified, Reachable: reachable, Since: since}}
}

func TestSeed(t *testing.T) {
	for _, c := range []struct {
		name          string
		published     []Vantage
		vantagePoints int
		want          health.Health
		wantSince     time.Time
	}{
		{"no verdict: a backend never probed", nil, 2, health.Health{}, time.Time{}},
		{"healthy", []Vantage{verdict("a", healthy, true, true, at(5)), verdict("b", healthy, true, true, at(3))}, 2,
			health.Health{State: healthy, Verified: true}, at(3)},
		{"a wrong probe path stays unsupported, unverified", []Vantage{verdict("a", unsupported, false, true, at(1))}, 2,
			health.Health{State: unsupported}, at(1)},
		{"the latch of one vantage point carries over", []Vantage{verdict("a", unsupported, false, true, at(1)), verdict("b", unsupported, true, true, at(2))}, 2,
			health.Health{State: unsupported, Verified: true}, at(1)},
		{"out of service by the quorum: out, as the machine would stand", []Vantage{verdict("a", unhealthy, true, true, at(7)), verdict("b", unhealthy, true, true, at(4))}, 2,
			health.Health{State: unhealthy, Verified: true, NotOK: 3}, at(4)},
		{"out and unreachable from everywhere", []Vantage{verdict("a", unhealthy, false, false, at(7)), verdict("b", unhealthy, false, false, time.Time{})}, 2,
			health.Health{State: unhealthy, Unreachable: true, NotOK: 3, Unanswered: 3}, at(7)},
		{"out, reachable from somewhere", []Vantage{verdict("a", unhealthy, true, false, at(7)), verdict("b", unhealthy, true, true, at(8))}, 2,
			health.Health{State: unhealthy, Verified: true, NotOK: 3}, at(7)},
		{"out, reachable from the first only", []Vantage{verdict("a", unhealthy, true, true, at(7)), verdict("b", unhealthy, true, false, at(8))}, 2,
			health.Health{State: unhealthy, Verified: true, NotOK: 3}, at(7)},
		{"one of two unhealthy is in service", []Vantage{verdict("a", unhealthy, true, false, at(7)), verdict("b", healthy, true, true, at(8))}, 2,
			health.Health{State: healthy, Verified: true}, at(8)},
		{"verified, but nobody has seen it healthy: unknown", []Vantage{verdict("a", unknown, true, true, time.Time{}), verdict("b", unhealthy, true, true, at(8))}, 2,
			health.Health{State: unknown, Verified: true}, time.Time{}},
		{"a replica counts once", []Vantage{verdict("a", unhealthy, true, true, at(1)), verdict("a", unhealthy, true, true, at(1)), verdict("b", healthy, true, true, at(2))}, 2,
			health.Health{State: healthy, Verified: true}, at(2)},
		{"one unhealthy verdict of two vantage points, the other not yet live: in service", []Vantage{verdict("a", unhealthy, true, true, at(7))}, 2,
			health.Health{State: unknown, Verified: true}, time.Time{}},
		{"one unhealthy verdict, one vantage point: out", []Vantage{verdict("a", unhealthy, true, true, at(7))}, 1,
			health.Health{State: unhealthy, Verified: true, NotOK: 3}, at(7)},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, since := Seed(c.published, c.vantagePoints, thresholds)
			if h != c.want || !since.Equal(c.wantSince) {
				t.Errorf("Seed = %+v since %v; want %+v since %v", h, since, c.want, c.wantSince)
			}
		})
	}
}

// TestSeededMachineRuns plays the seeded machine on: the cases that
// seeding is for, each of which a seed that dropped what it carries
// would get wrong.
func TestSeededMachineRuns(t *testing.T) {
	notFound := health.Result{Class: health.ClassRefused, StatusCode: 404}
	ok := health.Result{Class: health.ClassOK, StatusCode: 200}
	run := func(h health.Health, results ...health.Result) health.Health {
		for _, r := range results {
			h = h.Step(r, thresholds)
		}
		return h
	}

	// A verified backend whose probe path starts refusing goes out on a
	// new vantage point as on the old: the latch came with the seed.
	h, _ := Seed([]Vantage{verdict("a", healthy, true, true, at(0))}, 0, thresholds)
	if h = run(h, notFound, notFound, notFound); h.State != unhealthy {
		t.Errorf("verified seed, then three 404s: %v; want unhealthy", h.State)
	}
	// A wrong probe path stays in service on a new vantage point.
	h, _ = Seed([]Vantage{verdict("a", unsupported, false, true, at(0))}, 0, thresholds)
	if h = run(h, notFound, notFound, notFound, notFound); h.State != unsupported {
		t.Errorf("unverified seed, then 404s: %v; want probe_unsupported", h.State)
	}
	// A backend out of service is not readmitted by a vantage point's
	// arrival: it must recover, successes ok results in a row.
	h, _ = Seed([]Vantage{verdict("a", unhealthy, true, true, at(0)), verdict("b", unhealthy, true, true, at(0))}, 0, thresholds)
	if h = run(h, ok); h.State != unhealthy {
		t.Errorf("out-of-service seed, then one ok: %v; want unhealthy still", h.State)
	}
	if h = run(h, ok); h.State != healthy {
		t.Errorf("out-of-service seed, then two ok: %v; want healthy", h.State)
	}
}

// TestSeedKeepsTheLatchAndTheWord checks every pair of verdicts two
// vantage points may publish: the seed is verified when either is, and
// in service exactly when the fleet's verdict over them is.
func TestSeedKeepsTheLatchAndTheWord(t *testing.T) {
	var all []Verdict
	for _, state := range health.States() {
		for _, verified := range []bool{false, true} {
			for _, reachable := range []bool{false, true} {
				if state != healthy || verified {
					all = append(all, Verdict{State: state, Verified: verified, Reachable: reachable})
				}
			}
		}
	}
	for _, x := range all {
		for _, y := range all {
			published := []Vantage{{Replica: "a", Verdict: x}, {Replica: "b", Verdict: y}}
			h, _ := Seed(published, 2, thresholds)
			if h.Verified != (x.Verified || y.Verified) {
				t.Errorf("Seed(%+v, %+v) verified %v", x, y, h.Verified)
			}
			if out := Decide([]string{"a", "b"}, published).OutOfService; h.InService() == out {
				t.Errorf("Seed(%+v, %+v) in service %v; the fleet's verdict is out %v", x, y, h.InService(), out)
			}
			if h.State == healthy && !h.Verified || h.Ejected {
				t.Errorf("Seed(%+v, %+v) = %+v: a machine Step never reaches", x, y, h)
			}
		}
	}
}
