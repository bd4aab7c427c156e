package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Hedge lets a fan-out round ask a second replica of a group whose chosen
// replica is late. It is off by default: a hedge is a second request to
// the group, which the backends pay for.
type Hedge struct {
	Enabled bool `yaml:"enabled"`
	// After is how long a round waits for the chosen replica before it
	// asks a sibling too: a duration, or auto for the group's recent p95.
	After HedgeAfter `yaml:"after"`
	// MinAfter is the shortest wait before a hedge, automatic or not.
	MinAfter model.Duration `yaml:"min_after"`
	// MaxPercent bounds the hedges to this share of the backend requests.
	MaxPercent float64 `yaml:"max_percent"`
}

// HedgeAfter is hedge.after: auto, or a fixed duration.
type HedgeAfter struct {
	// Auto reads the wait from the group's recent answers; otherwise
	// Duration is the wait.
	Auto     bool
	Duration model.Duration
}

// hedgeAuto is the hedge.after value that reads the wait from the group's
// recent answers.
const hedgeAuto = "auto"

// UnmarshalYAML accepts auto or a duration.
func (a *HedgeAfter) UnmarshalYAML(unmarshal func(any) error) error {
	var raw string
	if err := unmarshal(&raw); err != nil {
		return err
	}
	if strings.TrimSpace(raw) == hedgeAuto {
		*a = HedgeAfter{Auto: true}
		return nil
	}
	d, err := model.ParseDuration(strings.TrimSpace(raw))
	if err != nil {
		return fmt.Errorf("%q is neither auto nor a duration such as 50ms", raw)
	}
	*a = HedgeAfter{Duration: d}
	return nil
}

// MarshalYAML writes the value back in the form it was given.
func (a HedgeAfter) MarshalYAML() (any, error) { return a.String(), nil }

func (a HedgeAfter) String() string {
	if a.Auto {
		return hedgeAuto
	}
	return a.Duration.String()
}

// DefaultHedge is the hedge block an empty one means: off, and once on,
// waiting for the group's recent p95, at least 10ms, hedging at most 10%
// of the backend requests.
func DefaultHedge() Hedge {
	return Hedge{Enabled: false, After: HedgeAfter{Auto: true}, MinAfter: model.Duration(10 * time.Millisecond), MaxPercent: 10}
}

func (v *validator) hedge(h Hedge) {
	const prefix = "fanout.hedge."
	if !h.After.Auto && h.After.Duration <= 0 {
		v.add(prefix+"after", "%s is not positive: want auto or a duration above 0s", h.After)
	}
	if !(h.MaxPercent >= 0 && h.MaxPercent <= 100) {
		v.add(prefix+"max_percent", "%v is not a percentage: want 0 to 100", h.MaxPercent)
	}
	timeout := v.c.Fanout.Timeout
	if !h.Enabled || timeout <= 0 {
		return
	}
	switch {
	case h.MinAfter >= timeout:
		v.add(prefix+"min_after", "%s is not shorter than %s (%s): no hedge would ever be sent", h.MinAfter, "fanout.timeout", timeout)
	case !h.After.Auto && h.After.Duration >= timeout:
		v.add(prefix+"after", "%s is not shorter than %s (%s): no hedge would ever be sent", h.After, "fanout.timeout", timeout)
	}
}
