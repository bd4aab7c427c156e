package fanout

import (
	"fmt"

	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/redact"
)

// CheckBackends names every static backend of cfg whose URL leads back to
// one of probegate's own listeners: probegate would probe and fan out to
// itself, a round to its own fan-out asking it again, and a request at
// any other path reaching its own pages and admin API. check-config,
// start-up and reloads refuse such a configuration alike; a discovered
// backend is dropped instead (the reconciler's DetectLoops).
func (s *Self) CheckBackends(cfg *config.Config) error {
	var problems []config.Problem
	for i, b := range cfg.Backends {
		if s.Targets(b.URL) {
			problems = append(problems, cfg.ProblemAt(fmt.Sprintf("backends[%d].url", i),
				"backend %q: %s points at one of probegate's own listeners: probegate would probe and fan out to itself",
				b.Name, redact.URL(b.URL)))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &config.Error{Problems: problems}
}
