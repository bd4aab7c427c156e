// Package outlier is the pure logic of outlier detection: every fan-out
// round asks every selected backend the same question, so each backend's
// peers are a control group, and a backend that does much worse than the
// median of its peers over the same rounds is an outlier.
//
// Nothing here does I/O or reads a clock: Stats keeps one backend's recent
// rounds in a fixed ring, Judge compares the backends' summaries,
// Ejection is the back-off of one backend's ejections, and State is all
// one backend keeps: its Stats, its Ejection and what its readmission
// waits for. The pool wires them to its backends (docs/design.md, "The
// fan-out as a control group").
package outlier
