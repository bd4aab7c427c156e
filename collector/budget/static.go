package budget

import (
	"fmt"

	"github.com/probegate/probegate/config"
)

// CheckStaticBudget refuses a readiness budget that the backends cfg lists
// cannot meet even all in service, when no service discovery can add
// more: /ready would answer 503 for ever. It judges by Compute, the
// arithmetic the pool applies at run time, so that check-config and the
// pool cannot disagree. The problem names readiness.min_available: only
// it can ask for more backends than there are, since max_unavailable
// leaves at most every backend to be in service.
func CheckStaticBudget(cfg *config.Config) error {
	if len(cfg.DiscoveryBlocks()) > 0 {
		return nil
	}
	n := len(cfg.Backends)
	b := Compute(cfg.Readiness, n, n)
	if b.Holds() {
		return nil
	}
	setting := "the default readiness.min_available 1"
	if cfg.Readiness.MinAvailable != nil {
		setting = "min_available " + cfg.Readiness.MinAvailable.String()
	}
	listed := "only " + countBackends(n)
	if n == 0 {
		listed = "none"
	}
	return &config.Error{Problems: []config.Problem{cfg.ProblemAt("readiness.min_available",
		"%s needs %s in service, but the list has %s and no service discovery adds more: /ready would answer 503 for ever",
		setting, countBackends(b.DesiredHealthy), listed)}}
}

// countBackends is "1 backend" or "n backends".
func countBackends(n int) string {
	if n == 1 {
		return "1 backend"
	}
	return fmt.Sprintf("%d backends", n)
}
