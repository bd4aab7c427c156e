package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/probegate/probegate/collector/health"
)

// simulation is one `probegate simulate` invocation.
type simulation struct {
	failures, successes int
	output              string
	inputs              []string
}

// simulatedProbe is one line of `probegate simulate --output=json`, with
// exactly the fields docs/design.md names.
type simulatedProbe struct {
	Probe     int    `json:"probe"`
	Input     string `json:"input"`
	Class     string `json:"class"`
	Reason    string `json:"reason"`
	Verified  bool   `json:"verified"`
	Reachable bool   `json:"reachable"`
	State     string `json:"state"`
	InService bool   `json:"in_service"`
}

// run feeds the inputs through the same state machine the prober uses and
// prints one line per probe. Every input is checked before anything is printed.
func (s simulation) run(stdout io.Writer) error {
	if s.failures < 1 || s.successes < 1 {
		return fmt.Errorf("--failures and --successes must be at least 1, got %d and %d", s.failures, s.successes)
	}
	results := make([]health.Result, len(s.inputs))
	for i, in := range s.inputs {
		r, err := health.ParseSimulatedResult(in)
		if err != nil {
			return fmt.Errorf("input %d: %w", i+1, err)
		}
		results[i] = r
	}
	th := health.Thresholds{Failures: s.failures, Successes: s.successes}
	enc := json.NewEncoder(stdout)
	var h health.Health
	for i, r := range results {
		h = h.Step(r, th)
		p := simulatedProbe{
			Probe: i + 1, Input: s.inputs[i], Class: r.Class.String(), Reason: r.Reason.String(),
			Verified: h.Verified, Reachable: h.Reachable(), State: h.State.String(), InService: h.InService(),
		}
		if s.output == "json" {
			if err := enc.Encode(p); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(stdout, "probe %-3d %-8s class=%-7s reason=%-9s state=%-17s in_service=%-5v verified=%-5v reachable=%v\n",
			p.Probe, p.Input, p.Class, orDash(p.Reason), p.State, p.InService, p.Verified, p.Reachable)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
