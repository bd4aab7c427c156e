//go:build faultinject

package main

import (
	"time"

	"github.com/probegate/probegate/cmd/probegate/internal/flagconfig"
)

// testHooks are the values of the --testing.* flags. They exist only in a
// binary built with the faultinject build tag, as the end-to-end tests
// build it: a release binary has no such flag (flags_release.go), so no
// deployment can set one, by accident or otherwise.
type testHooks struct {
	// clockOffset is --testing.clock-offset.
	clockOffset time.Duration
}

// testingFlags registers the hidden flags that exist for probegate's own
// tests and nothing else. They are hidden from --help and
// --help-long, and have no environment variable.
func (o *options) testingFlags(app flagconfig.Adder) {
	// A test hook: the end-to-end tests start replicas whose clocks are
	// minutes ahead or behind, to show that no replica's clock decides
	// when an entry of the shared store ends.
	app.Flag("testing.clock-offset", "TEST HOOK, never for production: add this offset (such as 20m or -20m) to every wall-clock reading probegate takes through its clock, to simulate a skewed clock.").
		Hidden().Default("0s").DurationVar(&o.clockOffset)
}

// clock is the wall clock every part of a running probegate reads:
// time.Now, shifted by --testing.clock-offset. The shifted readings keep
// their monotonic part, so durations measured between two of them are
// true ones. A socket's deadline is an absolute time the kernel compares
// with the real clock: it is always taken from time.Now, never from this
// clock, or a skewed replica would time out every write (behind) or none
// (ahead).
func (o *options) clock() func() time.Time {
	offset := o.clockOffset
	if offset == 0 {
		return time.Now
	}
	return func() time.Time { return time.Now().Add(offset) }
}
