//go:build faultinject

package main

import (
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// TestClockOffsetIsAHiddenTestHook: --testing.clock-offset shifts the
// clock every part of probegate reads, ahead or behind, is hidden from
// --help, and leaves the clock alone when not given.
func TestClockOffsetIsAHiddenTestHook(t *testing.T) {
	isolateEnv(t)
	for _, tc := range []struct {
		arg    string
		offset time.Duration
	}{{"--testing.clock-offset=20m", 20 * time.Minute}, {"--testing.clock-offset=-20m", -20 * time.Minute}} {
		before := time.Now()
		got := parsed(t, tc.arg).clock()()
		if shift := got.Sub(before.Add(tc.offset)); shift < 0 || shift > time.Minute {
			t.Errorf("%s: clock reads %v at %v, want %v later", tc.arg, got, before, tc.offset)
		}
	}
	if o := parsed(t); o.clockOffset != 0 {
		t.Errorf("default offset %v, want none", o.clockOffset)
	}
	app := kingpin.New("probegate", "test")
	registerFlags(app)
	if f := app.GetFlag("testing.clock-offset"); f == nil || !f.Model().Hidden {
		t.Error("--testing.clock-offset is not a hidden flag")
	}
}
