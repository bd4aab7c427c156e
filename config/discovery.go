package config

import (
	"fmt"

	"github.com/prometheus/common/model"
)

// discovery checks the relabelling rules applied to discovered targets.
// The file and DNS discovery blocks check themselves as they are decoded.
func (v *validator) discovery() {
	v.atLeastOne("max_discovered_backends", v.c.MaxDiscoveredBackends)
	for i, rc := range v.c.RelabelConfigs {
		field := fmt.Sprintf("relabel_configs[%d]", i)
		if rc == nil {
			v.add(field, "an empty relabelling rule")
			continue
		}
		if err := rc.Validate(model.UTF8Validation); err != nil {
			v.add(field, "%v", err)
		}
	}
}

// ValidBackendName reports whether name may name a backend: letters,
// digits, '_', '.', ':' and '-'.
func ValidBackendName(name string) bool {
	return backendNameRE.MatchString(name)
}
