package pool

import (
	"testing"

	"github.com/probegate/probegate/collector/traffic"
)

// TestCorrelatedFailure is the correlated-failure rule, round by round.
func TestCorrelatedFailure(t *testing.T) {
	var (
		ok        = traffic.Outcome{}
		refused   = traffic.Outcome{Erred: true, Reason: traffic.HTTP4xx}
		failed    = traffic.Outcome{Erred: true, Reason: traffic.HTTP5xx, Failed: true}
		local     = traffic.Outcome{Erred: true, Reason: traffic.Local}
		straggler = traffic.Outcome{Erred: true, Reason: traffic.Straggler}
	)
	for _, tc := range []struct {
		name  string
		round []traffic.Outcome
		want  bool
	}{
		{"every backend failed", []traffic.Outcome{failed, failed, failed}, true},
		{"one failed among successes", []traffic.Outcome{failed, ok, ok}, false},
		{"a refusal is an answer, not a failure", []traffic.Outcome{failed, refused}, false},
		{"the only backend asked failed", []traffic.Outcome{failed}, false},
		{"local outcomes are neither", []traffic.Outcome{failed, local, failed}, true},
		{"a failure and a local outcome", []traffic.Outcome{failed, local}, true},
		{"a straggler answered its peers' pace", []traffic.Outcome{failed, straggler}, false},
		{"nothing failed", []traffic.Outcome{ok, ok}, false},
		{"a refused round", []traffic.Outcome{local, local}, false},
		{"no backend asked", nil, false},
	} {
		samples := make([]RoundSample, len(tc.round))
		for i, o := range tc.round {
			samples[i].Outcome = o
		}
		if got := correlatedFailure(samples); got != tc.want {
			t.Errorf("%s: correlated %v; want %v", tc.name, got, tc.want)
		}
	}
}
