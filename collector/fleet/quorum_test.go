package fleet

import (
	"testing"

	"github.com/probegate/probegate/collector/health"
)

// Short names for the states of the tables.
const (
	unknown     = health.StateUnknown
	healthy     = health.StateHealthy
	unhealthy   = health.StateUnhealthy
	unsupported = health.StateProbeUnsupported
)

// said is the verdicts of the tables: replica names and their states,
// alternating.
func said(pairs ...any) []Vantage {
	var out []Vantage
	for i := 0; i < len(pairs); i += 2 {
		state := pairs[i+1].(health.State)
		out = append(out, Vantage{Replica: pairs[i].(string), Verdict: Verdict{State: state, Verified: state == healthy, Reachable: true}})
	}
	return out
}

func TestDecide(t *testing.T) {
	ab, abc, abcd := []string{"a", "b"}, []string{"a", "b", "c"}, []string{"a", "b", "c", "d"}
	for _, c := range []struct {
		name      string
		vantage   []string
		published []Vantage
		want      Decision
	}{
		{"no verdict: probe locally", ab, nil, Decision{Local: true}},
		{"only verdicts of replicas that are not vantage points: probe locally", ab, said("x", unhealthy, "y", unhealthy), Decision{Local: true}},
		{"no vantage point at all", nil, said("a", unhealthy), Decision{Local: true}},
		{"one vantage point, unhealthy: out", []string{"a"}, said("a", unhealthy), Decision{OutOfService: true, Live: 1, Unhealthy: 1}},
		{"one of two vantage points unhealthy, the other without a live verdict: in", ab, said("a", unhealthy), Decision{Live: 1, Unhealthy: 1}},
		{"two of three unhealthy, the third without a live verdict: out", abc, said("a", unhealthy, "b", unhealthy), Decision{OutOfService: true, Live: 2, Unhealthy: 2}},
		{"one of one healthy", ab, said("b", healthy), Decision{Live: 1}},
		{"two of two unhealthy: out", ab, said("a", unhealthy, "b", unhealthy), Decision{OutOfService: true, Live: 2, Unhealthy: 2}},
		{"one of two unhealthy: in", ab, said("a", unhealthy, "b", healthy), Decision{Live: 2, Unhealthy: 1}},
		{"one of two unhealthy, the other has not judged yet: in", ab, said("a", unknown, "b", unhealthy), Decision{Live: 1, Unhealthy: 1}},
		{"unknown verdicts abstain: probe locally", ab, said("a", unknown, "b", unknown), Decision{Local: true}},
		{"probe_unsupported is in service", ab, said("a", unsupported, "b", unsupported), Decision{Live: 2}},
		{"two of three: out", abc, said("a", unhealthy, "b", healthy, "c", unhealthy), Decision{OutOfService: true, Live: 3, Unhealthy: 2}},
		{"one of three: in", abc, said("a", unhealthy, "b", healthy, "c", healthy), Decision{Live: 3, Unhealthy: 1}},
		{"two of four: in", abcd, said("a", unhealthy, "b", healthy, "c", unhealthy, "d", healthy), Decision{Live: 4, Unhealthy: 2}},
		{"three of four: out", abcd, said("a", unhealthy, "b", unhealthy, "c", unhealthy, "d", healthy), Decision{OutOfService: true, Live: 4, Unhealthy: 3}},
		{"a lost vantage point's verdict does not count", ab, said("a", healthy, "b", unhealthy, "x", unhealthy), Decision{Live: 2, Unhealthy: 1}},
		{"a replica counts once", ab, said("a", unhealthy, "a", unhealthy, "b", healthy), Decision{Live: 2, Unhealthy: 1}},
		{"a replica counts once, by its first verdict", ab, said("a", healthy, "a", unhealthy), Decision{Live: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Decide(c.vantage, c.published); got != c.want {
				t.Errorf("Decide = %+v; want %+v", got, c.want)
			}
		})
	}
}
