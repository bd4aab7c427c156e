package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestSimulateProbeKinds runs `probegate simulate` with answers of every
// kind, as a user types them.
func TestSimulateProbeKinds(t *testing.T) {
	cases := []struct {
		inputs               []string
		class, reason, state string
		inService            bool
	}{
		{[]string{"grpc:UNIMPLEMENTED", "grpc:UNIMPLEMENTED", "grpc:NOT_FOUND"}, "refused", "", "probe_unsupported", true},
		{[]string{"grpc:UNIMPLEMENTED", "grpc:NOT_SERVING", "grpc:UNIMPLEMENTED", "grpc:NOT_SERVING"}, "failed", "grpc_not_serving", "unhealthy", false},
		{[]string{"tcp:ok", "tcp:refused", "tcp:timeout", "tcp:reset"}, "failed", "transport", "unhealthy", false},
		{[]string{"200", "body_mismatch", "body_mismatch", "http:body_mismatch"}, "failed", "body_mismatch", "unhealthy", false},
		{[]string{"grpc:SERVING"}, "ok", "", "healthy", true},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.inputs, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"simulate", "--output=json"}, c.inputs...), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			var last simulatedProbe
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
				t.Fatal(err)
			}
			if last.Class != c.class || last.Reason != c.reason || last.State != c.state || last.InService != c.inService {
				t.Errorf("last probe %+v, want %s/%s %s in_service=%v", last, c.class, c.reason, c.state, c.inService)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"simulate", "tcp:404"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), `"tcp:404" is not a probe result`) {
		t.Errorf("tcp:404 exited %d with %q, want an error naming the input", code, stderr.String())
	}
}
