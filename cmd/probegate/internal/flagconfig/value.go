// Package flagconfig is the framework of probegate's flags: every flag has
// an environment variable (PROBEGATE_ and the flag name in upper snake
// case), a flag beats its variable, and a value remembers which of the two
// gave it, so that an error names what the operator actually typed. The
// flags that replace a configuration key are Overrides: applied to a
// decoded configuration, each records its origin there, and Validate then
// blames the flag rather than the file.
//
// Which flags probegate has is the command's business; this package only
// says how a flag is read.
package flagconfig

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"
)

// Adder is where flags are registered: the application or one command.
type Adder interface {
	Flag(name, help string) *kingpin.FlagClause
}

// Envar is the environment variable of a flag: --gate.drain is
// PROBEGATE_GATE_DRAIN.
func Envar(flag string) string {
	return "PROBEGATE_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(flag))
}

// source remembers how a flag's value was given, so that errors name the
// flag or the environment variable the operator actually used.
type source struct {
	name  string
	envar string
	// byFlag is set by kingpin while it reads the command line, before any
	// value is set, when the flag is on it.
	byFlag bool
}

// origin names the flag or environment variable that gave the value.
func (s *source) origin() string {
	if s.byFlag {
		return "--" + s.name
	}
	return s.envar
}

// register adds the flag with the environment variable envar (none when
// empty); value records how it was given in s.
func (s *source) register(app Adder, name, envar, help string, value kingpin.Value) *kingpin.FlagClause {
	s.name, s.envar = name, envar
	clause := app.Flag(name, help).IsSetByUser(&s.byFlag)
	if envar != "" {
		clause = clause.Envar(envar)
	}
	clause.SetValue(value)
	return clause
}

// Value is a flag value of type T that records whether it was given, by
// the flag or its environment variable. kingpin sets a flag's default
// through Set too, so a flag whose Given matters has no default: the
// configuration's default applies instead.
type Value[T any] struct {
	source
	value *T
	set   bool
	parse func(string) (T, error)
}

// NewValue is a Value that parse reads into p.
func NewValue[T any](p *T, parse func(string) (T, error)) *Value[T] {
	return &Value[T]{value: p, parse: parse}
}

// Register adds the flag with its environment variable.
func (v *Value[T]) Register(app Adder, name, help string) *kingpin.FlagClause {
	return v.register(app, name, Envar(name), help, v)
}

// Set parses a value from the command line, the environment or the
// default; a bad value is an error naming where it came from. Set from
// code, it counts as given.
func (v *Value[T]) Set(s string) error {
	parsed, err := v.parse(s)
	if err != nil {
		return fmt.Errorf("%s: %w", v.origin(), err)
	}
	*v.value, v.set = parsed, true
	return nil
}

func (v *Value[T]) String() string {
	if v.value == nil {
		return ""
	}
	return fmt.Sprint(*v.value)
}

// Given reports whether the flag, its environment variable or its default
// set the value.
func (v *Value[T]) Given() bool { return v.set }

// Get is the value.
func (v *Value[T]) Get() T { return *v.value }

// boolValue is a Value that kingpin treats as a switch, with its --no- form.
type boolValue struct{ Value[bool] }

// IsBoolFlag tells kingpin the flag takes no argument.
func (*boolValue) IsBoolFlag() bool { return true }
