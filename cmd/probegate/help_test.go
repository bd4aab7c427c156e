package main

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// listedFlags are the flags a command's --help lists.
func listedFlags(t *testing.T, register func(flagsAdder *kingpin.CmdClause)) []string {
	t.Helper()
	app := kingpin.New("probegate", "test")
	cmd := app.Command("cmd", "test")
	register(cmd)
	var names []string
	for _, f := range cmd.Model().Flags {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	slices.Sort(names)
	return names
}

// TestCheckConfigHelpListsOnlyTheFlagsItReads: check-config's help lists
// the flags the judgement of a configuration reads and no other, while a
// command line written for serve is still accepted as it is.
func TestCheckConfigHelpListsOnlyTheFlagsItReads(t *testing.T) {
	isolateEnv(t)
	got := listedFlags(t, func(c *kingpin.CmdClause) { registerCheckFlags(c) })
	want := []string{"backend", "config.file", "gate.drain", "gate.shutdown-timeout",
		"health-probe", "health-probe.failures", "health-probe.interval", "health-probe.path", "health-probe.successes", "health-probe.timeout",
		"web.admin-listen-address", "web.agent-listen-address", "web.config.file", "web.enable-admin-api", "web.enable-lifecycle", "web.health-listen-address", "web.listen-address", "web.systemd-socket"}
	if !slices.Equal(got, want) {
		t.Errorf("check-config lists\n%v\nwant\n%v", got, want)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"check-config", "--log.level=debug", "--web.enable-lifecycle", "--storage.path=/tmp", "--backend=a=http://127.0.0.1:1"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Errorf("%q: exit %d, stderr %q; want serve's flags accepted", args, code, stderr.String())
	}
}

// TestHelpShowsNoExampleAsADefault: a flag's help shows a value only when
// it is the value the flag has when not given; a flag without a default
// shows a placeholder in capitals, such as FILE.
func TestHelpShowsNoExampleAsADefault(t *testing.T) {
	// The flags whose placeholder is their default: the file read when
	// none is named, the storage directory, and the configuration keys
	// the flags override, whose defaults are the configuration's.
	defaultPlaceholders := map[string]bool{"config.file": true, "storage.path": true}
	metavariable := regexp.MustCompile(`^[A-Z][A-Z_:=]*$`)
	app := kingpin.New("probegate", "test")
	registerFlags(app)
	for _, f := range app.Model().Flags {
		if f.PlaceHolder == "" || metavariable.MatchString(f.PlaceHolder) || defaultPlaceholders[f.Name] ||
			strings.HasPrefix(f.Name, "health-probe.") || strings.HasPrefix(f.Name, "gate.") {
			continue
		}
		t.Errorf("--%s shows %q, which it does not default to; use a placeholder such as FILE or ADDRESS", f.Name, f.PlaceHolder)
	}
}
