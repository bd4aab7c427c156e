// Package history keeps the recent past that the status page shows: a
// backend's last probe results (Probes) and a pool's last state changes
// (Log), each in a fixed ring, so that recording one writes a slot and
// allocates nothing, and memory stays the same however long probegate
// runs.
//
// Nothing here does I/O or reads a clock: every entry carries its time.
package history
