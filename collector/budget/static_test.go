package budget

import (
	"testing"

	"github.com/prometheus/prometheus/discovery/file"

	"github.com/probegate/probegate/config"
)

// TestCheckListed: a budget the listed backends cannot meet even all in
// service is refused, saying what it asks and what the list has, unless
// service discovery may add the backends it asks for.
func TestCheckListed(t *testing.T) {
	two := []config.Backend{{Name: "a", URL: "http://127.0.0.1:1"}, {Name: "b", URL: "http://127.0.0.1:2"}}
	withDiscovery := config.Default()
	withDiscovery.FileSDConfigs = []*file.SDConfig{{Files: []string{"more.yml"}}}
	for _, tc := range []struct {
		name         string
		minAvailable string
		backends     []config.Backend
		base         *config.Config
		want         string
	}{
		{"min_available 5 of 2", "5", two, nil,
			"readiness.min_available: min_available 5 needs 5 backends in service, but the list has only 2 backends and no service discovery adds more: /ready would answer 503 for ever"},
		{"no backend", "", nil, nil,
			"readiness.min_available: the default readiness.min_available 1 needs 1 backend in service, but the list has none and no service discovery adds more: /ready would answer 503 for ever"},
		{"min_available 3 of 1", "3", two[:1], nil,
			"readiness.min_available: min_available 3 needs 3 backends in service, but the list has only 1 backend and no service discovery adds more: /ready would answer 503 for ever"},
		{"min_available 2 of 2", "2", two, nil, ""},
		{"100% of 2", "100%", two, nil, ""},
		{"0 of none", "0", nil, nil, ""},
		{"discovery may add them", "5", two, withDiscovery, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.base
			if cfg == nil {
				cfg = config.Default()
			}
			cfg.Backends = tc.backends
			if tc.minAvailable != "" {
				cfg.Readiness.MinAvailable = intOrPercent(t, tc.minAvailable)
			}
			err := CheckStaticBudget(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckStaticBudget = %v, want nil", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("CheckStaticBudget = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestCheckListedGroups: a per-group min_available that a listed group
// cannot meet with every replica in service is refused, naming the group;
// a group of one replica has no budget, and discovery may add replicas.
func TestCheckListedGroups(t *testing.T) {
	backends := []config.Backend{
		{Name: "s1-a", URL: "http://127.0.0.1:1", Group: "s1"}, {Name: "s1-b", URL: "http://127.0.0.1:2", Group: "s1"},
		{Name: "s2-a", URL: "http://127.0.0.1:3", Group: "s2"}, {Name: "s2-b", URL: "http://127.0.0.1:4", Group: "s2"},
		{Name: "s2-c", URL: "http://127.0.0.1:5", Group: "s2"}, {Name: "alone", URL: "http://127.0.0.1:6"},
	}
	withDiscovery := config.Default()
	withDiscovery.FileSDConfigs = []*file.SDConfig{{Files: []string{"more.yml"}}}
	for _, tc := range []struct {
		name string
		per  config.GroupBudget
		base *config.Config
		want string
	}{
		{"min_available 3", config.GroupBudget{MinAvailable: intOrPercent(t, "3")}, nil,
			`readiness.per_group.min_available: min_available 3 needs 3 backends in service in group "s1", but it has only 2 backends and no service discovery adds more: /ready would answer 503 for ever (check group_budget)`},
		{"min_available 2", config.GroupBudget{MinAvailable: intOrPercent(t, "2")}, nil, ""},
		{"min_available 100%", config.GroupBudget{MinAvailable: intOrPercent(t, "100%")}, nil, ""},
		{"max_unavailable 0", config.GroupBudget{MaxUnavailable: intOrPercent(t, "0")}, nil, ""},
		{"discovery may add replicas", config.GroupBudget{MinAvailable: intOrPercent(t, "3")}, withDiscovery, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.base
			if cfg == nil {
				cfg = config.Default()
			}
			cfg.Backends = backends
			cfg.Readiness.PerGroup = tc.per
			err := CheckStaticBudget(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckStaticBudget = %v, want nil", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("CheckStaticBudget = %v, want %q", err, tc.want)
			}
		})
	}
}
