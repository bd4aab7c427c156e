package outlier

import (
	"time"

	"github.com/probegate/probegate/config"
)

// Settings are the rules of outlier detection.
type Settings struct {
	// Window is how far back the rounds judged go.
	Window time.Duration
	// MinRounds is how many rounds a backend needs in the window to be
	// judged or to serve as a peer.
	MinRounds int
	// FailureGap: a failure ratio above the peers' median by more than
	// this is an outlier.
	FailureGap float64
	// LatencyFactor and LatencyFloor: a p90 latency above LatencyFactor
	// times the peers' median p90 and above LatencyFloor is an outlier.
	LatencyFactor float64
	LatencyFloor  time.Duration
	// BaseEjection times the consecutive ejections, capped at
	// MaxEjection, is how long an ejection lasts.
	BaseEjection time.Duration
	MaxEjection  time.Duration
}

// SettingsOf are the settings of a configuration block.
func SettingsOf(c config.OutlierDetection) Settings {
	return Settings{
		Window:        time.Duration(c.Window),
		MinRounds:     c.MinRounds,
		FailureGap:    c.FailureGap,
		LatencyFactor: c.LatencyFactor,
		LatencyFloor:  time.Duration(c.LatencyFloor),
		BaseEjection:  time.Duration(c.BaseEjection),
		MaxEjection:   time.Duration(c.MaxEjection),
	}
}

// Reason is why a backend is an outlier.
type Reason uint8

// The reasons.
const (
	// ReasonFailure is a failure ratio too far above the peers'.
	ReasonFailure Reason = iota
	// ReasonLatency is a p90 latency too far above the peers'.
	ReasonLatency
	// NumReasons is the number of reasons, for arrays indexed by them.
	NumReasons
)

var reasonNames = [NumReasons]string{"failure", "latency"}

func (r Reason) String() string { return reasonNames[r] }

// Reasons lists every reason in a stable order.
func Reasons() []Reason { return []Reason{ReasonFailure, ReasonLatency} }
