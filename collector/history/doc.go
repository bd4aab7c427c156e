// Package history keeps a backend's past as the status page and the
// metrics show it: its last probe results (Probes) and a pool's last state
// changes (Log), each in a fixed ring, so that recording one writes a slot
// and allocates nothing and memory stays the same however long probegate
// runs, and the stretches it spent out of service (Downtime). ProbeStats
// gathers a backend's probe past: the last results, the histogram of
// probe durations and the certificate expiry the last probe over TLS saw.
//
// Nothing here does I/O or reads a clock: every entry carries its time.
package history
