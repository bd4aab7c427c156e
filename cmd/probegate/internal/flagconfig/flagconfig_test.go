package flagconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config"
)

// flags is a fresh application with one Value, one Override, one Alias,
// one Switch and the backend flag.
type flags struct {
	app       *kingpin.Application
	drain     *Value[model.Duration]
	overrides Overrides
}

func newFlags() *flags {
	f := &flags{app: kingpin.New("t", "test")}
	f.drain = NewValue(new(model.Duration), Duration)
	f.drain.Register(f.app, "gate.drain", "drain")
	interval := func(c *config.Config) *model.Duration { return &c.HealthProbe.Interval }
	Override(&f.overrides, f.app, "health-probe.interval", "interval", "health_probe.interval", Duration, interval)
	Alias(&f.overrides, f.app, "interval", "alias", "health_probe.interval", Duration, interval)
	f.overrides.Switch(f.app, "health-probe", "PROBEGATE_PROBING", "switch", "health_probe.enabled",
		func(c *config.Config) *bool { return &c.HealthProbe.Enabled })
	f.overrides.Backends(f.app, "backend", "backends")
	return f
}

func TestAFlagBeatsItsVariable(t *testing.T) {
	t.Setenv("PROBEGATE_GATE_DRAIN", "")
	f := newFlags()
	if _, err := f.app.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if f.drain.Given() {
		t.Errorf("neither flag nor variable: given, value %v", f.drain.Get())
	}
	t.Setenv("PROBEGATE_GATE_DRAIN", "4s")
	for args, want := range map[string]time.Duration{"": 4 * time.Second, "--gate.drain=5s": 5 * time.Second} {
		f := newFlags()
		if _, err := f.app.Parse(strings.Fields(args)); err != nil {
			t.Fatal(err)
		}
		if !f.drain.Given() || f.drain.Get() != model.Duration(want) {
			t.Errorf("%q: given %v, value %v; want given, %v", args, f.drain.Given(), f.drain.Get(), want)
		}
	}
}

func TestABadValueNamesWhereItCameFrom(t *testing.T) {
	t.Setenv("PROBEGATE_GATE_DRAIN", "soon")
	_, err := newFlags().app.Parse(nil)
	if err == nil || !strings.Contains(err.Error(), `PROBEGATE_GATE_DRAIN: "soon" is not a duration`) {
		t.Errorf("from the variable: %v", err)
	}
	_, err = newFlags().app.Parse([]string{"--gate.drain=later"})
	if err == nil || !strings.Contains(err.Error(), `--gate.drain: "later" is not a duration`) {
		t.Errorf("from the flag: %v", err)
	}
	t.Setenv("PROBEGATE_GATE_DRAIN", "")
	_, err = newFlags().app.Parse([]string{"--backend=a=http://u:secret@x"})
	if err != nil {
		t.Fatalf("a good backend: %v", err)
	}
	_, err = newFlags().app.Parse([]string{"--backend=http://u:secret@x"})
	if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "--backend: ") {
		t.Errorf("a bad backend: %v, want it named and its password hidden", err)
	}
}

// TestOverridesApplyWhatWasGivenAndBlameTheFlag: a key whose flag was not
// given keeps the file's value; one that was takes the flag's, and
// Validate names the flag, the alias or the variable that gave it.
func TestOverridesApplyWhatWasGivenAndBlameTheFlag(t *testing.T) {
	t.Setenv("PROBEGATE_PROBING", "")
	t.Setenv("PROBEGATE_HEALTH_PROBE_INTERVAL", "")
	t.Setenv("PROBEGATE_BACKEND", "")
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--health-probe.interval=100ms"}, "", "--health-probe.interval (health_probe.interval)"},
		{[]string{"--interval=100ms"}, "", "--interval (health_probe.interval)"},
		{nil, "100ms", "PROBEGATE_HEALTH_PROBE_INTERVAL (health_probe.interval)"},
	} {
		t.Setenv("PROBEGATE_HEALTH_PROBE_INTERVAL", tc.env)
		f := newFlags()
		if _, err := f.app.Parse(append(tc.args, "--backend=a=http://127.0.0.1:1")); err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		f.overrides.Apply(cfg)
		if cfg.HealthProbe.Interval != model.Duration(100*time.Millisecond) || !f.overrides.AddsBackends() || len(cfg.Backends) != 1 {
			t.Errorf("%q: interval %v, backends %v", tc.args, cfg.HealthProbe.Interval, cfg.Backends)
		}
		// The default timeout is longer than 100ms: the key's origin is blamed.
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: Validate says %v, want it to name %s", tc.args, err, tc.want)
		}
	}

	t.Setenv("PROBEGATE_HEALTH_PROBE_INTERVAL", "")
	f := newFlags()
	if _, err := f.app.Parse([]string{"--no-health-probe"}); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.HealthProbe.Interval = model.Duration(time.Minute)
	f.overrides.Apply(cfg)
	if cfg.HealthProbe.Enabled || cfg.HealthProbe.Interval != model.Duration(time.Minute) || f.overrides.AddsBackends() {
		t.Errorf("--no-health-probe alone: %+v, backends %v", cfg.HealthProbe, cfg.Backends)
	}
}

func TestAnAliasHasNoVariable(t *testing.T) {
	for _, f := range newFlags().app.Model().Flags {
		if f.Name == "interval" && f.Envar != "" {
			t.Errorf("--interval reads %s", f.Envar)
		}
		if f.Name == "health-probe" && f.Envar != "PROBEGATE_PROBING" {
			t.Errorf("--health-probe reads %q, want the variable it was given", f.Envar)
		}
	}
}
