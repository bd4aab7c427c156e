package flagconfig

import (
	"fmt"
	"strconv"

	"github.com/alecthomas/kingpin/v2"

	"github.com/probegate/probegate/config"
)

// Overrides are the flags that replace a configuration key when given, and
// the flag that adds backends after the file's. The zero value has none.
type Overrides struct {
	keys     []override
	backends backends
}

// override is a flag that replaces one configuration key when it was
// given.
type override struct {
	// field is the key, as Validate names it (health_probe.interval).
	field string
	given func() bool
	// origin is the flag or environment variable that gave the value.
	origin func() string
	apply  func(*config.Config)
}

// add records v as the flag of field, which key points at in a
// configuration.
func add[T any](o *Overrides, v *Value[T], field string, key func(*config.Config) *T) {
	o.keys = append(o.keys, override{field: field, given: v.Given, origin: v.origin,
		apply: func(c *config.Config) { *key(c) = *v.value }})
}

// Override registers the flag name, with its environment variable, that
// replaces the configuration key field. Its help shows the key's default,
// which applies when neither the flag nor the file sets it.
func Override[T any](o *Overrides, app Adder, name, help, field string,
	parse func(string) (T, error), key func(*config.Config) *T) *kingpin.FlagClause {
	v := NewValue(new(T), parse)
	add(o, v, field, key)
	return v.Register(app, name, help).PlaceHolder(fmt.Sprint(*key(config.Default())))
}

// Alias registers a short flag, without an environment variable, that
// sets the same key as a long one.
func Alias[T any](o *Overrides, app Adder, name, help, field string,
	parse func(string) (T, error), key func(*config.Config) *T) *kingpin.FlagClause {
	v := NewValue(new(T), parse)
	add(o, v, field, key)
	return v.register(app, name, "", help, v)
}

// Switch registers the boolean flag name, with its --no- form and the
// environment variable envar, that replaces the key field.
func (o *Overrides) Switch(app Adder, name, envar, help, field string, key func(*config.Config) *bool) *kingpin.FlagClause {
	v := &boolValue{*NewValue(new(bool), strconv.ParseBool)}
	add(o, &v.Value, field, key)
	return v.register(app, name, envar, help, v)
}

// Apply replaces the keys whose flags or environment variables were given
// and appends the backends of the backend flag, recording each origin so
// that Validate blames the flag.
func (o *Overrides) Apply(cfg *config.Config) {
	for _, ov := range o.keys {
		if ov.given() {
			ov.apply(cfg)
			cfg.SetOrigin(ov.field, ov.origin())
		}
	}
	for _, b := range o.backends.entries {
		backend := config.Backend{Name: b.name, URL: b.url}
		backend.SetOrigin(b.origin)
		cfg.Backends = append(cfg.Backends, backend)
	}
}
