package health

import (
	"strings"
	"testing"
)

func TestParseSimulatedResultKinds(t *testing.T) {
	cases := []struct {
		input    string
		class    Class
		reason   Reason
		answered bool
	}{
		{"200", ClassOK, ReasonNone, true},
		{"http:503", ClassFailed, ReasonHTTP5xx, true},
		{"http:timeout", ClassFailed, ReasonTimeout, false},
		{"body_mismatch", ClassFailed, ReasonBodyMismatch, true},
		{"http:body_mismatch", ClassFailed, ReasonBodyMismatch, true},
		{"tcp:ok", ClassOK, ReasonNone, true},
		{"tcp:refused", ClassFailed, ReasonTransport, false},
		{"tcp:reset", ClassFailed, ReasonTransport, false},
		{"tcp:timeout", ClassFailed, ReasonTimeout, false},
		{"grpc:SERVING", ClassOK, ReasonNone, true},
		{"grpc:serving", ClassOK, ReasonNone, true},
		{"grpc:NOT_SERVING", ClassFailed, ReasonGRPCNotServing, true},
		{"grpc:UNKNOWN", ClassFailed, ReasonGRPCNotServing, true},
		{"grpc:UNIMPLEMENTED", ClassRefused, ReasonNone, true},
		{"grpc:NOT_FOUND", ClassRefused, ReasonNone, true},
		{"grpc:SERVICE_UNKNOWN", ClassRefused, ReasonNone, true},
		{"grpc:DEADLINE_EXCEEDED", ClassFailed, ReasonTimeout, false},
		{"grpc:UNAVAILABLE", ClassFailed, ReasonTransport, false},
		{"grpc:PERMISSION_DENIED", ClassFailed, ReasonTransport, false},
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
		state  State
		// reachable and verified of the last step.
		reachable, verified bool
	}{
		{"no health service stays in service unverified", repeatInputs(6, "grpc:UNIMPLEMENTED"), StateProbeUnsupported, true, false},
		{"an unknown service name stays in service unverified", repeatInputs(6, "grpc:NOT_FOUND"), StateProbeUnsupported, true, false},
		{"a blip among refusals does not strand", []string{"grpc:UNIMPLEMENTED", "grpc:UNIMPLEMENTED", "grpc:DEADLINE_EXCEEDED", "grpc:UNAVAILABLE", "grpc:UNIMPLEMENTED"}, StateProbeUnsupported, true, false},
		{"NOT_SERVING latches, then refusals count", []string{"grpc:UNIMPLEMENTED", "grpc:NOT_SERVING", "grpc:UNIMPLEMENTED", "grpc:NOT_SERVING"}, StateUnhealthy, true, true},
		{"NOT_SERVING three times takes a serving backend out", []string{"grpc:SERVING", "grpc:NOT_SERVING", "grpc:NOT_SERVING", "grpc:NOT_SERVING"}, StateUnhealthy, true, true},
		{"grpc dead from the start", repeatInputs(3, "grpc:UNAVAILABLE"), StateUnhealthy, false, false},
		{"grpc recovers at successes", []string{"grpc:SERVING", "grpc:NOT_SERVING", "grpc:NOT_SERVING", "grpc:NOT_SERVING", "grpc:SERVING", "grpc:SERVING"}, StateHealthy, true, true},
		{"body mismatch latches and takes out", []string{"200", "body_mismatch", "body_mismatch", "body_mismatch"}, StateUnhealthy, true, true},
		{"tcp dead from the start", repeatInputs(3, "tcp:refused"), StateUnhealthy, false, false},
		{"tcp connect makes reachable and healthy", []string{"tcp:refused", "tcp:refused", "tcp:refused", "tcp:ok", "tcp:ok"}, StateHealthy, true, true},
		{"tcp stays reachable while connecting", repeatInputs(5, "tcp:ok"), StateHealthy, true, true},
		{"tcp one short of failures changes nothing", []string{"tcp:ok", "tcp:timeout", "tcp:reset"}, StateHealthy, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			steps := stepAll(t, fallThreeRiseTwo, c.inputs...)
			last := steps[len(steps)-1]
			if last.State != c.state || last.Reachable() != c.reachable || last.Verified != c.verified {
				t.Errorf("after %v: state %v reachable %v verified %v, want %v %v %v",
					c.inputs, last.State, last.Reachable(), last.Verified, c.state, c.reachable, c.verified)
			}
		})
	}
}
