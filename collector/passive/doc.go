// Package passive is the pure logic of passive health, which judges a
// backend by the real fan-out traffic it serves: Window is one backend's
// sliding window of outcomes, State all one backend keeps (its window and
// its ejections, with the verdict over the window's counts, the rules of
// who may be ejected and when the window readmits), and
// EjectionAllowed the max_ejected_percent cap over the pool.
//
// Nothing here does I/O or reads a clock: the time of each outcome is a
// parameter. The pool wires these to its backends and does the ejecting
// (docs/design.md, "Passive health").
package passive
