package config

import (
	"fmt"
	"reflect"
	"strings"

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

// DiscoveryBlocks are the service discovery blocks of the configuration,
// by key (such as file_sd_configs), in the order of the fields, with how
// many blocks each key holds; keys without a block are left out. Every
// field whose key ends in _sd_configs is one, so a new mechanism's key is
// counted as soon as it is a field: what needs to know whether discovery
// may add backends asks here rather than naming the mechanisms.
func (c *Config) DiscoveryBlocks() []DiscoveryKey {
	var keys []DiscoveryKey
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		f := v.Field(i)
		if strings.HasSuffix(name, "_sd_configs") && f.Kind() == reflect.Slice && f.Len() > 0 {
			keys = append(keys, DiscoveryKey{Key: name, Blocks: f.Len()})
		}
	}
	return keys
}

// DiscoveryKey is one service discovery key and how many blocks it holds.
type DiscoveryKey struct {
	Key    string
	Blocks int
}
