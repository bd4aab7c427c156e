package outlier

import "time"

// Ejection is the back-off of one backend's ejections: each lasts
// BaseEjection times the multiplier, capped at MaxEjection, the
// multiplier counting consecutive ejections and halving after every
// window the backend spends in service without one.
type Ejection struct {
	// Ejected is set from Eject until Readmit.
	Ejected bool
	// Reason is why the backend was last ejected.
	Reason Reason
	// Since and Until are when the last ejection began and when it is
	// over.
	Since, Until time.Time
	// Multiplier is the back-off: the consecutive ejections, decayed.
	Multiplier int
	// clean is when the current clean stretch began: the last
	// readmission, or the last halving since.
	clean time.Time
}

// Eject starts an ejection at now and returns how long it lasts.
func (e *Ejection) Eject(now time.Time, r Reason, s Settings) time.Duration {
	e.Decay(now, s)
	e.Multiplier++
	d := s.MaxEjection
	// The cap is checked on the multiplier first, so that a long run of
	// ejections cannot overflow the product.
	if limit := int64(s.MaxEjection / max(s.BaseEjection, 1)); int64(e.Multiplier) <= limit {
		d = min(s.BaseEjection*time.Duration(e.Multiplier), s.MaxEjection)
	}
	e.Ejected, e.Reason, e.Since, e.Until = true, r, now, now.Add(d)
	return d
}

// Over reports whether the ejection has lasted its time at now.
func (e *Ejection) Over(now time.Time) bool { return e.Ejected && !now.Before(e.Until) }

// Readmit ends the ejection at now; the clean stretch starts.
func (e *Ejection) Readmit(now time.Time) {
	e.Ejected = false
	e.clean = now
}

// Decay halves the multiplier once for every whole window since the
// clean stretch began, while the backend is in service.
func (e *Ejection) Decay(now time.Time, s Settings) {
	if e.Ejected || e.Multiplier == 0 || s.Window <= 0 {
		return
	}
	windows := now.Sub(e.clean) / s.Window
	if windows <= 0 {
		return
	}
	if windows >= 63 {
		e.Multiplier = 0
	} else {
		e.Multiplier >>= uint(windows)
	}
	e.clean = e.clean.Add(windows * s.Window)
}
