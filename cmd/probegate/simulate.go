package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/alecthomas/kingpin/v2"

	"github.com/probegate/probegate/cmd/probegate/internal/flagconfig"
	"github.com/probegate/probegate/cmd/probegate/internal/termsafe"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/probe"
	"github.com/probegate/probegate/config"
)

// simulation is one `probegate simulate` invocation.
type simulation struct {
	failures, successes int
	output              string
	inputs              []string
	// opts reads the thresholds as serve does: flag, then environment,
	// then the configuration file, then the default.
	opts *options
}

// registerSimulateFlags adds the flags simulate honours to its command:
// the thresholds, read as serve reads them, with --failures and
// --successes as short aliases, and the output format.
func registerSimulateFlags(cmd *kingpin.CmdClause) *simulation {
	sim := &simulation{opts: &options{}}
	o := sim.opts
	o.configFile = flagconfig.NewValue(new(string), flagconfig.String)
	o.configFile.Register(cmd, "config.file",
		"Configuration file whose health_probe.failures and successes apply. When not given, probegate.yml is read if it exists.").
		PlaceHolder(defaultConfigFile)
	failures := func(c *config.Config) *int { return &c.HealthProbe.Failures }
	successes := func(c *config.Config) *int { return &c.HealthProbe.Successes }
	flagconfig.Override(&o.overrides, cmd, "health-probe.failures", "Consecutive failed probes that take a backend out of service (fall).",
		"health_probe.failures", flagconfig.Count, failures)
	flagconfig.Override(&o.overrides, cmd, "health-probe.successes", "Consecutive ok probes that bring it back (rise).",
		"health_probe.successes", flagconfig.Count, successes)
	flagconfig.Alias(&o.overrides, cmd, "failures", "Same as --health-probe.failures.", "health_probe.failures", flagconfig.Count, failures).PlaceHolder("N")
	flagconfig.Alias(&o.overrides, cmd, "successes", "Same as --health-probe.successes.", "health_probe.successes", flagconfig.Count, successes).PlaceHolder("N")
	cmd.Flag("output", "Output format: one of text, json.").Default("text").EnumVar(&sim.output, "text", "json")
	cmd.Arg("results", "Probe results in order: "+probe.SimulatedResultSyntax()+".").Required().StringsVar(&sim.inputs)
	return sim
}

// load reads the thresholds from the flags, the environment and the
// configuration file, as serve would.
func (s *simulation) load() error {
	cfg, err := s.opts.loadConfig()
	if err != nil {
		return err
	}
	s.failures, s.successes = cfg.HealthProbe.Failures, cfg.HealthProbe.Successes
	return nil
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
		return fmt.Errorf("failures and successes must be at least 1, got %d and %d", s.failures, s.successes)
	}
	results := make([]health.Result, len(s.inputs))
	for i, in := range s.inputs {
		r, err := probe.ParseSimulatedResult(in)
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
		termsafe.Fprintf(stdout, "probe %-3d %-8s class=%-7s reason=%-9s state=%-17s in_service=%-5v verified=%-5v reachable=%v\n",
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
