package config

// Probing is how the replicas of a pool share their probes.
type Probing struct {
	Shared SharedProbing `yaml:"shared"`
}

// SharedProbing lets the replicas of a pool probe each backend from a few
// of them, its vantage points, and judge it by their published verdicts,
// instead of each replica probing every backend. It is off by default: it
// writes to the shared store, and needs the replicas' views there
// (maintenance.store: etcd) and a stable name for each (--replica.name).
type SharedProbing struct {
	Enabled bool `yaml:"enabled"`
	// VantagePoints is how many live replicas probe each backend, capped
	// by the live replicas.
	VantagePoints int `yaml:"vantage_points"`
}

// MaxVantagePoints bounds probing.shared.vantage_points: more replicas
// probing each backend than this is every replica of any real pool, which
// is what shared probing is off for.
const MaxVantagePoints = 16

// DefaultProbing is the probing block an empty one means: each replica
// probes every backend, and once shared, two replicas probe each.
func DefaultProbing() Probing {
	return Probing{Shared: SharedProbing{Enabled: false, VantagePoints: 2}}
}

func (v *validator) probing() {
	s := v.c.Probing.Shared
	if s.VantagePoints < 1 || s.VantagePoints > MaxVantagePoints {
		v.add("probing.shared.vantage_points", "%d is not between 1 and %d", s.VantagePoints, MaxVantagePoints)
	}
	if s.Enabled && v.c.Maintenance.Store != StoreEtcd {
		v.add("probing.shared.enabled", "needs maintenance.store: %s, where the replicas publish their verdicts and see each other", StoreEtcd)
	}
}
