package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// probeKeys are the health_probe keys: key i is the yaml name of field i
// of HealthProbe. They are read off the struct so that a new key is one
// new field.
var probeKeys = func() []string {
	t := reflect.TypeFor[HealthProbe]()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i], _, _ = strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
	}
	return keys
}()

// probeKeyBit is the bit of key in HealthProbeOverride.set, 0 when
// health_probe has no such key.
func probeKeyBit(key string) uint64 {
	i := slices.Index(probeKeys, key)
	if i < 0 {
		return 0
	}
	return 1 << i
}

// NewHealthProbeOverride is the health_probe block of a backend built in
// code that sets keys to their values in p. It panics on a key
// health_probe does not have: such keys are the program's, not a user's.
func NewHealthProbeOverride(p HealthProbe, keys ...string) HealthProbeOverride {
	o := HealthProbeOverride{Values: p}
	o.Set(keys...)
	return o
}

// Set makes the block set keys, to the values o.Values holds for them.
// It panics on a key health_probe does not have.
func (o *HealthProbeOverride) Set(keys ...string) {
	for _, key := range keys {
		bit := probeKeyBit(key)
		if bit == 0 {
			panic(fmt.Sprintf("config: health_probe has no key %q", key))
		}
		o.set |= bit
	}
}

// IsSet reports whether the block sets key.
func (o HealthProbeOverride) IsSet(key string) bool {
	return o.set&probeKeyBit(key) != 0
}

// IsZero reports whether the block sets no key, so that a backend written
// back out without one has no health_probe block.
func (o HealthProbeOverride) IsZero() bool { return o.set == 0 }

// applyTo replaces the values of p's keys that the block sets.
func (o HealthProbeOverride) applyTo(p *HealthProbe) {
	to, from := reflect.ValueOf(p).Elem(), reflect.ValueOf(o.Values)
	for i := range probeKeys {
		if o.set&(1<<i) != 0 {
			to.Field(i).Set(from.Field(i))
		}
	}
}

// UnmarshalYAML decodes the block as a HealthProbe, with the strictness
// and line numbers of the decoder of the whole file, and records the keys
// it holds. Decoded as a map too, the block shows its keys, those it
// merges in (`<<: *anchor`) included; a key whose value is null sets
// nothing, as an absent key.
func (o *HealthProbeOverride) UnmarshalYAML(unmarshal func(any) error) error {
	*o = HealthProbeOverride{}
	if err := unmarshal(&o.Values); err != nil {
		return err
	}
	var keys map[string]any
	if err := unmarshal(&keys); err != nil {
		return err
	}
	for key, value := range keys {
		if value != nil {
			o.set |= probeKeyBit(key)
		}
	}
	return nil
}

// MarshalYAML writes the keys the block sets, in HealthProbe's order,
// and no other: written back out and read again, the block sets the same
// keys to the same values, including a key set to its empty value.
func (o HealthProbeOverride) MarshalYAML() (any, error) {
	node := &yaml.Node{Kind: yaml.MappingNode}
	values := reflect.ValueOf(o.Values)
	for i, key := range probeKeys {
		if o.set&(1<<i) == 0 {
			continue
		}
		var value yaml.Node
		if err := value.Encode(values.Field(i).Interface()); err != nil {
			return nil, fmt.Errorf("health_probe.%s: %w", key, err)
		}
		node.Content = append(node.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, &value)
	}
	return node, nil
}
