//go:build !faultinject

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

// TestReleaseHasNoTestHooks: a binary built without the faultinject tag,
// as make build and make release build it, knows no --testing.* flag,
// hidden or not, and serve, demo and check-config refuse one as unknown
// before doing anything.
func TestReleaseHasNoTestHooks(t *testing.T) {
	isolateEnv(t)
	app := kingpin.New("probegate", "test")
	registerFlags(app.Command("serve", "test"))
	registerCheckFlags(app.Command("check-config", "test"))
	for _, cmd := range app.Model().Commands {
		for _, f := range cmd.Flags {
			if strings.HasPrefix(f.Name, "testing.") {
				t.Errorf("%s has the test hook --%s", cmd.Name, f.Name)
			}
		}
	}
	// An address no listener can take ends serve and demo at once should
	// they accept the flag.
	const unlistenable = "--web.listen-address=127.0.0.1:99999"
	for _, args := range [][]string{
		{"--testing.clock-offset=20m", "--backend=a=http://127.0.0.1:1", unlistenable},
		{"demo", "--testing.clock-offset=20m", unlistenable},
		{"check-config", "--testing.clock-offset=20m", "--backend=a=http://127.0.0.1:1"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "unknown long flag '--testing.clock-offset'") {
			t.Errorf("probegate %s: exit %d, stderr %q; want it refused as an unknown flag", strings.Join(args, " "), code, stderr.String())
		}
	}
}
