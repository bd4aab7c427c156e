package probe

import (
	"strings"
	"testing"

	"github.com/probegate/probegate/collector/health"
)

func TestParseSimulatedResultKinds(t *testing.T) {
	cases := []struct {
		input    string
		class    health.Class
		reason   health.Reason
		answered bool
	}{
		{"200", health.ClassOK, health.ReasonNone, true},
		{"http:503", health.ClassFailed, health.ReasonHTTP5xx, true},
		{"http:timeout", health.ClassFailed, health.ReasonTimeout, false},
		{"body_mismatch", health.ClassFailed, health.ReasonBodyMismatch, true},
		{"http:body_mismatch", health.ClassFailed, health.ReasonBodyMismatch, true},
		{"tcp:ok", health.ClassOK, health.ReasonNone, true},
		{"tcp:refused", health.ClassFailed, health.ReasonTransport, false},
		{"tcp:reset", health.ClassFailed, health.ReasonTransport, false},
		{"tcp:timeout", health.ClassFailed, health.ReasonTimeout, false},
		{"grpc:SERVING", health.ClassOK, health.ReasonNone, true},
		{"grpc:serving", health.ClassOK, health.ReasonNone, true},
		{"grpc:NOT_SERVING", health.ClassFailed, health.ReasonGRPCNotServing, true},
		{"grpc:UNKNOWN", health.ClassFailed, health.ReasonGRPCNotServing, true},
		{"grpc:UNIMPLEMENTED", health.ClassRefused, health.ReasonNone, true},
		{"grpc:NOT_FOUND", health.ClassRefused, health.ReasonNone, true},
		{"grpc:SERVICE_UNKNOWN", health.ClassRefused, health.ReasonNone, true},
		{"grpc:DEADLINE_EXCEEDED", health.ClassFailed, health.ReasonTimeout, false},
		{"grpc:UNAVAILABLE", health.ClassFailed, health.ReasonTransport, false},
		{"grpc:PERMISSION_DENIED", health.ClassFailed, health.ReasonTransport, false},
	}
	for _, c := range cases {
		t.Run(c.input, func(t *testing.T) {
			r, err := ParseSimulatedResult(c.input)
			if err != nil {
				t.Fatal(err)
			}
			if r.Class != c.class || r.Reason != c.reason || r.Answered() != c.answered {
				t.Errorf("%s = %v/%v answered=%v, want %v/%v answered=%v", c.input, r.Class, r.Reason, r.Answered(), c.class, c.reason, c.answered)
			}
		})
	}
	for _, bad := range []string{"udp:ok", "tcp:200", "grpc:200", "grpc:OK", "http:ok", "body", "tcp:", "600"} {
		if _, err := ParseSimulatedResult(bad); err == nil || !strings.Contains(err.Error(), "is not a probe result") {
			t.Errorf("ParseSimulatedResult(%q) = %v, want an error saying it is not a probe result", bad, err)
		}
	}
}

// TestTCPAndGRPCAnswersDriveTheStateMachine replays the state machine
// behaviours that apply to tcp and grpc with their own answers: the state
// machine is the same, only the classification differs.
func TestTCPAndGRPCAnswersDriveTheStateMachine(t *testing.T) {
	cases := []struct {
		name   string
		inputs []string
		state  health.State
		// reachable and verified of the last step.
		reachable, verified bool
	}{
		{"no health service stays in service unverified", repeat(6, "grpc:UNIMPLEMENTED"), health.StateProbeUnsupported, true, false},
		{"an unknown service name stays in service unverified", repeat(6, "grpc:NOT_FOUND"), health.StateProbeUnsupported, true, false},
		{"a blip among refusals does not strand", []string{"grpc:UNIMPLEMENTED", "grpc:UNIMPLEMENTED", "grpc:DEADLINE_EXCEEDED", "grpc:UNAVAILABLE", "grpc:UNIMPLEMENTED"}, health.StateProbeUnsupported, true, false},
		{"NOT_SERVING latches, then refusals count", []string{"grpc:UNIMPLEMENTED", "grpc:NOT_SERVING", "grpc:UNIMPLEMENTED", "grpc:NOT_SERVING"}, health.StateUnhealthy, true, true},
		{"NOT_SERVING three times takes a serving backend out", []string{"grpc:SERVING", "grpc:NOT_SERVING", "grpc:NOT_SERVING", "grpc:NOT_SERVING"}, health.StateUnhealthy, true, true},
		{"grpc dead from the start", repeat(3, "grpc:UNAVAILABLE"), health.StateUnhealthy, false, false},
		{"grpc recovers at successes", []string{"grpc:SERVING", "grpc:NOT_SERVING", "grpc:NOT_SERVING", "grpc:NOT_SERVING", "grpc:SERVING", "grpc:SERVING"}, health.StateHealthy, true, true},
		{"body mismatch latches and takes out", []string{"200", "body_mismatch", "body_mismatch", "body_mismatch"}, health.StateUnhealthy, true, true},
		{"tcp dead from the start", repeat(3, "tcp:refused"), health.StateUnhealthy, false, false},
		{"tcp connect makes reachable and healthy", []string{"tcp:refused", "tcp:refused", "tcp:refused", "tcp:ok", "tcp:ok"}, health.StateHealthy, true, true},
		{"tcp stays reachable while connecting", repeat(5, "tcp:ok"), health.StateHealthy, true, true},
		{"tcp one short of failures changes nothing", []string{"tcp:ok", "tcp:timeout", "tcp:reset"}, health.StateHealthy, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var last health.Health
			for _, in := range c.inputs {
				r, err := ParseSimulatedResult(in)
				if err != nil {
					t.Fatal(err)
				}
				last = last.Step(r, health.Thresholds{Failures: 3, Successes: 2})
			}
			if last.State != c.state || last.Reachable() != c.reachable || last.Verified != c.verified {
				t.Errorf("after %v: state %v reachable %v verified %v, want %v %v %v",
					c.inputs, last.State, last.Reachable(), last.Verified, c.state, c.reachable, c.verified)
			}
		})
	}
}
