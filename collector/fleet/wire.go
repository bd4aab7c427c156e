package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// MaxEncodedVerdict bounds what Decode reads: the longest verdict encodes
// in about 110 bytes, and a peer's bytes are read as hostile.
const MaxEncodedVerdict = 1024

// wireVerdict is a verdict as it is written: compact JSON with one-letter
// keys, since a replica writes one per backend it probes and the write
// volume is bounded. Every field is a pointer so that Decode can tell an
// absent key from a zero value. Keys Decode does not know are ignored,
// so that a newer version may add some during a rolling upgrade.
type wireVerdict struct {
	// State is the machine state's name.
	State *string `json:"s"`
	// Verified is the latch.
	Verified *bool `json:"v"`
	// Reachable is the machine's reachability.
	Reachable *bool `json:"r"`
	// Class is the last result's class, absent before the first result.
	Class *string `json:"c,omitempty"`
	// Reason is the last result's failure reason, absent unless it
	// failed.
	Reason *string `json:"e,omitempty"`
	// Since is the start of State in Unix milliseconds, 0 when unknown.
	Since *int64 `json:"t"`
}

// Encode writes a verdict in its wire form, `{"s":"healthy","v":true,
// "r":true,"c":"ok","t":1735689600123}` (without the spaces): the state,
// the latch, reachable, the last result's class and reason, and since in
// Unix milliseconds. Its length is the verdict's size in a write. A
// verdict that Decode would refuse is refused here too.
func Encode(v Verdict) ([]byte, error) {
	if err := v.check(); err != nil {
		return nil, err
	}
	state := v.State.String()
	var since int64
	// A time at or before 1970 is no time a probe ran: it is written as
	// unknown, so that every written since reads back.
	if v.Since.After(time.UnixMilli(0)) {
		since = v.Since.UnixMilli()
	}
	w := wireVerdict{State: &state, Verified: &v.Verified, Reachable: &v.Reachable, Since: &since}
	if v.Probed {
		class := v.Class.String()
		w.Class = &class
	}
	if v.Reason != health.ReasonNone {
		reason := v.Reason.String()
		w.Reason = &reason
	}
	return json.Marshal(w)
}

// Decode reads a verdict that Encode wrote, from a peer whose bytes are
// hostile: anything but a complete, consistent verdict of at most
// MaxEncodedVerdict bytes is an error naming what is wrong. Since has
// millisecond precision and is in UTC.
func Decode(data []byte) (Verdict, error) {
	if len(data) > MaxEncodedVerdict {
		return Verdict{}, fmt.Errorf("verdict: %d bytes, more than the %d a verdict may have", len(data), MaxEncodedVerdict)
	}
	var w wireVerdict
	if err := json.Unmarshal(data, &w); err != nil {
		return Verdict{}, fmt.Errorf("verdict: %w", err)
	}
	switch {
	case w.State == nil:
		return Verdict{}, errors.New(`verdict: no state ("s")`)
	case w.Verified == nil:
		return Verdict{}, errors.New(`verdict: no verified latch ("v")`)
	case w.Reachable == nil:
		return Verdict{}, errors.New(`verdict: no reachable ("r")`)
	case w.Since == nil:
		return Verdict{}, errors.New(`verdict: no since ("t")`)
	case *w.Since < 0:
		return Verdict{}, fmt.Errorf(`verdict: since ("t") %d is before 1970`, *w.Since)
	}
	v := Verdict{Verified: *w.Verified, Reachable: *w.Reachable}
	var ok bool
	if v.State, ok = named(*w.State, health.States()); !ok {
		return Verdict{}, fmt.Errorf(`verdict: state ("s") %q is none of %v`, *w.State, health.States())
	}
	if w.Class != nil {
		if v.Class, ok = named(*w.Class, health.Classes()); !ok {
			return Verdict{}, fmt.Errorf(`verdict: class ("c") %q is none of %v`, *w.Class, health.Classes())
		}
		v.Probed = true
	}
	if w.Reason != nil {
		if v.Reason, ok = named(*w.Reason, health.FailureReasons()); !ok {
			return Verdict{}, fmt.Errorf(`verdict: reason ("e") %q is none of %v`, *w.Reason, health.FailureReasons())
		}
	}
	if *w.Since > 0 {
		v.Since = time.UnixMilli(*w.Since).UTC()
	}
	if err := v.check(); err != nil {
		return Verdict{}, err
	}
	return v, nil
}

// check is the one rule of a consistent verdict, for Encode and Decode
// alike: a known state, healthy only when verified; a reason exactly when the last result failed; and
// never a failure of probegate's own, which judges no backend.
func (v Verdict) check() error {
	switch {
	case v.State >= health.NumStates:
		return fmt.Errorf("verdict: state %d is none of %v", v.State, health.States())
	case v.State == health.StateHealthy && !v.Verified:
		// The machine is healthy only after an ok result, which latches.
		return errors.New(`verdict: state ("s") "healthy" without the verified latch ("v")`)
	case !v.Probed && (v.Class != health.ClassOK || v.Reason != health.ReasonNone):
		return errors.New(`verdict: a class or reason ("c", "e") without a probe result`)
	case v.Class >= health.NumClasses:
		return fmt.Errorf("verdict: class %d is none of %v", v.Class, health.Classes())
	case v.Reason >= health.NumReasons:
		return fmt.Errorf("verdict: reason %d is none of %v", v.Reason, health.FailureReasons())
	case v.Reason == health.ReasonLocal:
		return errors.New(`verdict: reason ("e") "local" is probegate's own failure, which judges no backend`)
	case v.Probed && v.Class == health.ClassFailed && v.Reason == health.ReasonNone:
		return errors.New(`verdict: class ("c") "failed" without a reason ("e")`)
	case v.Probed && v.Class != health.ClassFailed && v.Reason != health.ReasonNone:
		return fmt.Errorf(`verdict: reason ("e") %q with class ("c") %q: only a failed result has one`, v.Reason, v.Class)
	}
	return nil
}

// named is the value among values whose name is name.
func named[T fmt.Stringer](name string, values []T) (T, bool) {
	for _, value := range values {
		if value.String() == name {
			return value, true
		}
	}
	var zero T
	return zero, false
}
