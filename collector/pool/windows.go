package pool

// This file keeps the memory of the features that are off at nothing: the
// windows that outlier detection and passive health keep per backend are
// allocated by their first record, and dropped when a reload turns their
// feature off.

// forgetUnusedWindows drops every backend's windows of the features that
// are off, outlier detection's rounds and passive health's outcomes, so
// that a reload turning one off frees them; a pool that never had one on
// holds none. The caller holds judgeMu.
//
// Outlier detection reads its settings under judgeMu, so no round refills
// a dropped window. Passive health does not: a fan-out round that read its
// rules just before the reload may record into a backend this pass has
// already visited, which then holds one window (176 bytes) until the next
// Apply. Its outcomes age out of the window with time, so nothing is ever
// judged on them; the gap is left open rather than putting every round's
// traffic behind judgeMu.
func forgetUnusedWindows(backends []*Backend, s Settings) {
	if s.Outlier.Enabled && s.Passive.Enabled {
		return
	}
	for _, b := range backends {
		b.mu.Lock()
		if !s.Outlier.Enabled {
			b.outlier.ForgetWindow()
		}
		if !s.Passive.Enabled {
			b.passive.ForgetWindow()
		}
		b.mu.Unlock()
	}
}
