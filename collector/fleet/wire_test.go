package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// at is a time of the tests, in milliseconds after a fixed instant.
func at(ms int64) time.Time { return time.UnixMilli(1735689600000 + ms).UTC() }

func TestEncode(t *testing.T) {
	for _, c := range []struct {
		name    string
		verdict Verdict
		want    string
	}{
		{"a failed backend", Verdict{State: health.StateUnhealthy, Verified: true, Probed: true, Class: health.ClassFailed, Reason: health.ReasonHTTP5xx, Since: at(123)},
			`{"s":"unhealthy","v":true,"r":false,"c":"failed","e":"http_5xx","t":1735689600123}`},
		{"a wrong probe path", Verdict{State: health.StateProbeUnsupported, Reachable: true, Probed: true, Class: health.ClassRefused, Since: at(0)},
			`{"s":"probe_unsupported","v":false,"r":true,"c":"refused","t":1735689600000}`},
		{"seeded, not probed yet, since unknown", Verdict{State: health.StateHealthy, Verified: true, Reachable: true},
			`{"s":"healthy","v":true,"r":true,"t":0}`},
		{"since before 1970 is unknown", Verdict{State: health.StateUnknown, Since: time.Unix(-5, 0)},
			`{"s":"unknown","v":false,"r":false,"t":0}`},
		{"sub-millisecond since is cut", Verdict{State: health.StateUnknown, Since: at(5).Add(999 * time.Microsecond)},
			`{"s":"unknown","v":false,"r":false,"t":1735689600005}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Encode(c.verdict)
			if err != nil || string(got) != c.want {
				t.Fatalf("Encode = %s, %v; want %s", got, err, c.want)
			}
		})
	}
}

// TestRoundTrip encodes every consistent verdict there is (every state,
// latch, reachability and last result) and reads it back.
func TestRoundTrip(t *testing.T) {
	results := []struct {
		probed bool
		class  health.Class
		reason health.Reason
	}{{false, health.ClassOK, health.ReasonNone}, {true, health.ClassOK, health.ReasonNone}, {true, health.ClassRefused, health.ReasonNone}}
	for _, reason := range health.FailureReasons() {
		if reason != health.ReasonLocal {
			results = append(results, struct {
				probed bool
				class  health.Class
				reason health.Reason
			}{true, health.ClassFailed, reason})
		}
	}
	n := 0
	for _, state := range health.States() {
		for _, verified := range []bool{false, true} {
			for _, reachable := range []bool{false, true} {
				for _, r := range results {
					v := Verdict{State: state, Verified: verified, Reachable: reachable, Probed: r.probed, Class: r.class, Reason: r.reason, Since: at(int64(n))}
					n++
					data, err := Encode(v)
					if state == health.StateHealthy && !verified {
						if err == nil {
							t.Errorf("Encode(%+v) = %s; want an error, healthy is verified", v, data)
						}
						continue
					}
					if err != nil {
						t.Fatalf("Encode(%+v): %v", v, err)
					}
					back, err := Decode(data)
					if err != nil || back != v {
						t.Fatalf("Decode(%s) = %+v, %v; want %+v", data, back, err, v)
					}
				}
			}
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, c := range []struct {
		name, data, want string
	}{
		{"not JSON", `healthy`, "invalid character"},
		{"not an object", `["healthy"]`, "cannot unmarshal array"},
		{"trailing bytes", `{"s":"unknown","v":false,"r":true,"t":0} {}`, "invalid character"},
		{"no state", `{"v":false,"r":true,"t":0}`, `no state ("s")`},
		{"null state", `{"s":null,"v":false,"r":true,"t":0}`, `no state ("s")`},
		{"no latch", `{"s":"unknown","r":true,"t":0}`, `no verified latch ("v")`},
		{"no reachable", `{"s":"unknown","v":false,"t":0}`, `no reachable ("r")`},
		{"no since", `{"s":"unknown","v":false,"r":true}`, `no since ("t")`},
		{"negative since", `{"s":"unknown","v":false,"r":true,"t":-1}`, `since ("t") -1 is before 1970`},
		{"fractional since", `{"s":"unknown","v":false,"r":true,"t":1.5}`, "cannot unmarshal number 1.5"},
		{"unknown state", `{"s":"ejected","v":false,"r":true,"t":0}`, `state ("s") "ejected" is none of [unknown healthy unhealthy probe_unsupported]`},
		{"state of another type", `{"s":2,"v":false,"r":true,"t":0}`, "cannot unmarshal number"},
		{"unknown class", `{"s":"unknown","v":false,"r":true,"c":"maybe","t":0}`, `class ("c") "maybe" is none of [ok refused failed]`},
		{"unknown reason", `{"s":"unhealthy","v":true,"r":true,"c":"failed","e":"gremlins","t":0}`, `reason ("e") "gremlins" is none of`},
		{"empty reason", `{"s":"unhealthy","v":true,"r":true,"c":"failed","e":"","t":0}`, `reason ("e") "" is none of`},
		{"a reason without a class", `{"s":"unknown","v":false,"r":false,"e":"timeout","t":0}`, "without a probe result"},
		{"failed without a reason", `{"s":"unhealthy","v":true,"r":true,"c":"failed","t":0}`, `"failed" without a reason`},
		{"ok with a reason", `{"s":"healthy","v":true,"r":true,"c":"ok","e":"timeout","t":0}`, "only a failed result has one"},
		{"probegate's own failure", `{"s":"unknown","v":false,"r":true,"c":"failed","e":"local","t":0}`, `"local" is probegate's own failure`},
		{"healthy, not verified", `{"s":"healthy","v":false,"r":true,"c":"ok","t":0}`, `"healthy" without the verified latch`},
		{"too long", `{"s":"unknown","v":false,"r":true,"t":0,"x":"` + strings.Repeat("x", MaxEncodedVerdict) + `"}`, "more than the 1024 a verdict may have"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := Decode([]byte(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "verdict: ") {
				t.Fatalf("Decode(%s) = %+v, %v; want an error containing %q", c.data, v, err, c.want)
			}
		})
	}
}

// TestDecodeIgnoresNewKeys: a verdict from a newer version, with a key
// this one does not know, still counts.
func TestDecodeIgnoresNewKeys(t *testing.T) {
	v, err := Decode([]byte(`{"s":"unhealthy","v":true,"r":false,"c":"failed","e":"timeout","t":1735689600000,"z":{"new":[1,2]}}`))
	want := Verdict{State: health.StateUnhealthy, Verified: true, Probed: true, Class: health.ClassFailed, Reason: health.ReasonTimeout, Since: at(0)}
	if err != nil || v != want {
		t.Fatalf("Decode = %+v, %v; want %+v", v, err, want)
	}
}

func TestEncodeRefusesInconsistent(t *testing.T) {
	for _, v := range []Verdict{
		{State: health.NumStates},
		{State: health.StateHealthy},
		{Reason: health.ReasonTimeout},
		{Class: health.ClassFailed},
		{Probed: true, Class: health.ClassFailed},
		{Probed: true, Class: health.ClassFailed, Reason: health.ReasonLocal},
		{Probed: true, Class: health.NumClasses},
		{Probed: true, Class: health.ClassFailed, Reason: health.NumReasons},
	} {
		if data, err := Encode(v); err == nil {
			t.Errorf("Encode(%+v) = %s; want an error", v, data)
		}
	}
}

func TestOf(t *testing.T) {
	h := health.Health{State: health.StateUnhealthy, Verified: true, Unreachable: true}
	last := &health.Result{Class: health.ClassFailed, Reason: health.ReasonTimeout}
	want := Verdict{State: health.StateUnhealthy, Verified: true, Probed: true, Class: health.ClassFailed, Reason: health.ReasonTimeout, Since: at(9)}
	if got := Of(h, last, at(9)); got != want {
		t.Errorf("Of = %+v; want %+v", got, want)
	}
	if got := Of(health.Health{}, nil, time.Time{}); got != (Verdict{Reachable: true}) {
		t.Errorf("Of(zero machine) = %+v; want unknown, reachable, not probed", got)
	}
}
