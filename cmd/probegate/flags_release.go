//go:build !faultinject

package main

import (
	"time"

	"github.com/probegate/probegate/cmd/probegate/internal/flagconfig"
)

// testHooks are empty in a release binary: the --testing.* flags, which
// inject faults for probegate's own tests, are built only with the
// faultinject build tag (flags_testing.go), as etcd builds its
// failpoints only into its test binaries.
type testHooks struct{}

// testingFlags registers nothing: a release binary refuses every
// --testing.* flag as unknown.
func (o *options) testingFlags(flagconfig.Adder) {}

// clock is the wall clock every part of a running probegate reads.
func (o *options) clock() func() time.Time { return time.Now }
