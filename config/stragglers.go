package config

import (
	"time"

	"github.com/prometheus/common/model"
)

// Stragglers lets a fan-out round answer without the backends its peers
// outrun. It is off by default: a partial answer means something other
// than a whole one, and a client must be told that it may get one.
type Stragglers struct {
	Enabled bool `yaml:"enabled"`
	// Factor times the median latency of the contributions so far is how
	// long a round waits for the backends still running.
	Factor float64 `yaml:"factor"`
	// MinWait is the least a round waits before it cuts anybody.
	MinWait model.Duration `yaml:"min_wait"`
}

// DefaultStragglers is the stragglers block an empty one means: off, and
// once on, waiting three times the median and at least 50ms.
func DefaultStragglers() Stragglers {
	return Stragglers{Enabled: false, Factor: 3, MinWait: model.Duration(50 * time.Millisecond)}
}

func (v *validator) stragglers(s Stragglers) {
	const prefix = "fanout.stragglers."
	if !(s.Factor > 1) {
		v.add(prefix+"factor", "%v would cut backends no slower than the median of their peers: want more than 1", s.Factor)
	}
	if s.Enabled && s.MinWait >= v.c.Fanout.Timeout && v.c.Fanout.Timeout > 0 {
		v.add(prefix+"min_wait", "%s is not shorter than %s (%s): no straggler would ever be cut", s.MinWait, "fanout.timeout", v.c.Fanout.Timeout)
	}
}
