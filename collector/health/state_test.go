package health

import (
	"strconv"
	"testing"
)

// parseInputs turns the inputs the tests use ("200", "404", "timeout",
// "error") into results, failing the test on anything else. The kinds'
// own answers are collector/probe's to parse.
func parseInputs(t testing.TB, inputs ...string) []Result {
	t.Helper()
	results := make([]Result, len(inputs))
	for i, in := range inputs {
		switch in {
		case "timeout":
			results[i] = TimeoutResult("simulated timeout")
		case "error":
			results[i] = TransportResult("simulated transport error")
		default:
			code, err := strconv.Atoi(in)
			if err != nil {
				t.Fatalf("input %q is not a status code, timeout or error", in)
			}
			results[i] = StatusResult(code)
		}
	}
	return results
}

// stepAll feeds the inputs through the state machine from the zero Health and
// returns every intermediate value.
func stepAll(t testing.TB, th Thresholds, inputs ...string) []Health {
	t.Helper()
	var h Health
	steps := make([]Health, 0, len(inputs))
	for _, r := range parseInputs(t, inputs...) {
		h = h.Step(r, th)
		steps = append(steps, h)
	}
	return steps
}

func repeatInputs(n int, inputs ...string) []string {
	var out []string
	for range n {
		out = append(out, inputs...)
	}
	return out
}

// fallThreeRiseTwo are the default thresholds: out after three failures,
// back after two successes.
var fallThreeRiseTwo = Thresholds{Failures: 3, Successes: 2}

// TestStateMachineBehaviours is one case for each numbered behaviour of the
// state machine in docs/design.md, thresholds 3/2.
func TestStateMachineBehaviours(t *testing.T) {
	cases := []struct {
		name   string
		inputs []string
		// check asserts on every step (i is the 0-based probe index).
		check func(t *testing.T, i int, h Health)
		// final asserts on the last step.
		final func(t *testing.T, h Health)
	}{
		{
			name:   "1 a probe path that always answers 404 stays in service unverified and reachable",
			inputs: repeatInputs(20, "404"),
			check: func(t *testing.T, i int, h Health) {
				if h.State != StateProbeUnsupported || !h.InService() || !h.Reachable() || h.Verified {
					t.Errorf("probe %d: got %+v, want probe_unsupported, in service, reachable, unverified", i+1, h)
				}
			},
		},
		{
			name:   "2 a transient timeout or transport error amid 404s does not strand the backend",
			inputs: []string{"404", "404", "timeout", "404", "error", "error", "404", "timeout", "404", "404"},
			check: func(t *testing.T, i int, h Health) {
				if !h.InService() {
					t.Errorf("probe %d: taken out of service: %+v", i+1, h)
				}
			},
			final: func(t *testing.T, h Health) {
				if h.State != StateProbeUnsupported {
					t.Errorf("final state %v, want probe_unsupported", h.State)
				}
			},
		},
		{
			name:   "3 a proxy alternating 404 and 503 reaches unhealthy",
			inputs: repeatInputs(3, "404", "503"),
			final: func(t *testing.T, h Health) {
				if h.State != StateUnhealthy || !h.Verified {
					t.Errorf("got %+v, want unhealthy and verified", h)
				}
			},
		},
		{
			name:   "4 a cycle of one 503 and a run of 404s never readmits a dead backend",
			inputs: append([]string{"503", "503", "503"}, repeatInputs(50, "503", "404", "404", "404", "404", "404")...),
			check: func(t *testing.T, i int, h Health) {
				if i >= 2 && h.State != StateUnhealthy {
					t.Errorf("probe %d: readmitted as %v", i+1, h.State)
				}
			},
		},
		{
			name:   "5 three 429s take a healthy backend out",
			inputs: []string{"200", "200", "429", "429", "429"},
			check: func(t *testing.T, i int, h Health) {
				want := StateHealthy
				if i == 4 {
					want = StateUnhealthy
				}
				if h.State != want {
					t.Errorf("probe %d: state %v, want %v", i+1, h.State, want)
				}
			},
		},
		{
			name:   "6 dead from the start becomes unhealthy and unreachable after failures probes",
			inputs: []string{"error", "error", "error", "error"},
			check: func(t *testing.T, i int, h Health) {
				dead := i >= 2
				if (h.State == StateUnhealthy) != dead || h.Reachable() == dead {
					t.Errorf("probe %d: %+v, want unhealthy and unreachable only from probe 3", i+1, h)
				}
			},
		},
		{
			name:   "6b any HTTP answer makes a dead backend reachable again",
			inputs: []string{"error", "error", "error", "503"},
			final: func(t *testing.T, h Health) {
				if !h.Reachable() || h.State != StateUnhealthy {
					t.Errorf("got %+v, want reachable but still unhealthy", h)
				}
			},
		},
		{
			name:   "7 recovery at exactly successes consecutive ok results",
			inputs: []string{"200", "503", "503", "503", "200", "200"},
			check: func(t *testing.T, i int, h Health) {
				want := map[int]State{0: StateHealthy, 1: StateHealthy, 2: StateHealthy, 3: StateUnhealthy, 4: StateUnhealthy, 5: StateHealthy}[i]
				if h.State != want {
					t.Errorf("probe %d: state %v, want %v", i+1, h.State, want)
				}
			},
		},
		{
			name:   "7b ok, failure, ok does not recover",
			inputs: []string{"503", "503", "503", "200", "503", "200"},
			final: func(t *testing.T, h Health) {
				if h.State != StateUnhealthy {
					t.Errorf("state %v, want unhealthy", h.State)
				}
			},
		},
		{
			name:   "8 ejection at exactly failures, one short changes nothing",
			inputs: []string{"200", "500", "500", "200", "500", "500", "500"},
			check: func(t *testing.T, i int, h Health) {
				want := StateHealthy
				if i == 6 {
					want = StateUnhealthy
				}
				if h.State != want {
					t.Errorf("probe %d: state %v, want %v", i+1, h.State, want)
				}
			},
		},
		{
			name:   "10 a not-yet-probed backend is in service",
			inputs: nil,
			final: func(t *testing.T, h Health) {
				if h.State != StateUnknown || !h.InService() || !h.Reachable() {
					t.Errorf("zero Health %+v, want unknown, in service, reachable", h)
				}
			},
		},
		{
			name:   "11 a verified backend whose probe path starts answering 404 is taken out after failures probes",
			inputs: []string{"200", "404", "404", "404"},
			check: func(t *testing.T, i int, h Health) {
				want := StateHealthy
				if i == 3 {
					want = StateUnhealthy
				}
				if h.State != want {
					t.Errorf("probe %d: state %v, want %v", i+1, h.State, want)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			steps := stepAll(t, fallThreeRiseTwo, c.inputs...)
			if c.check != nil {
				for i, h := range steps {
					c.check(t, i, h)
				}
			}
			if c.final != nil {
				var last Health
				if len(steps) > 0 {
					last = steps[len(steps)-1]
				}
				c.final(t, last)
			}
		})
	}
}

// TestClassification is behaviour 9: 501 is a refusal; 500, 502, 503, 504
// are failures; 302 is ok; plus the rest of the probe classes.
func TestClassification(t *testing.T) {
	cases := []struct {
		code   int
		class  Class
		reason Reason
	}{
		{200, ClassOK, ReasonNone}, {204, ClassOK, ReasonNone}, {302, ClassOK, ReasonNone}, {399, ClassOK, ReasonNone},
		{400, ClassRefused, ReasonNone}, {401, ClassRefused, ReasonNone}, {404, ClassRefused, ReasonNone}, {499, ClassRefused, ReasonNone},
		{501, ClassRefused, ReasonNone},
		{429, ClassFailed, ReasonHTTP429},
		{500, ClassFailed, ReasonHTTP5xx}, {502, ClassFailed, ReasonHTTP5xx}, {503, ClassFailed, ReasonHTTP5xx}, {504, ClassFailed, ReasonHTTP5xx}, {599, ClassFailed, ReasonHTTP5xx},
	}
	for _, c := range cases {
		t.Run(strconv.Itoa(c.code), func(t *testing.T) {
			r := StatusResult(c.code)
			if r.Class != c.class || r.Reason != c.reason || !r.Answered() {
				t.Errorf("StatusResult(%d) = %v/%v answered=%v, want %v/%v answered", c.code, r.Class, r.Reason, r.Answered(), c.class, c.reason)
			}
		})
	}
	for _, r := range []Result{TimeoutResult("no answer"), TransportResult("connection refused")} {
		if r.Answered() || r.Class != ClassFailed {
			t.Errorf("%+v, want an unanswered failure", r)
		}
	}
}

// TestStepIsAPureValueFunction guards the property the simulator and the
// prober rely on: Step never mutates its receiver.
func TestStepIsAPureValueFunction(t *testing.T) {
	h := Health{State: StateHealthy, Verified: true}
	before := h
	_ = h.Step(StatusResult(503), fallThreeRiseTwo)
	if h != before {
		t.Errorf("Step changed its receiver: %+v -> %+v", before, h)
	}
}

// TestEjectionNeedsOKProbes: an ejected backend whose probe path
// refuses is not readmitted by refusals, only by successes ok results.
func TestEjectionNeedsOKProbes(t *testing.T) {
	th := fallThreeRiseTwo
	h := Health{State: StateHealthy, Verified: true}.Eject()
	if h.InService() {
		t.Fatal("ejected backend still in service")
	}
	h = h.Step(StatusResult(200), th)
	if h.InService() {
		t.Fatal("readmitted after one ok probe, want successes=2")
	}
	h = h.Step(StatusResult(200), th)
	if h.State != StateHealthy || h.Ejected {
		t.Fatalf("not readmitted after two ok probes: %+v", h)
	}

	unverified := Health{State: StateProbeUnsupported}.Eject()
	for range 5 {
		unverified = unverified.Step(StatusResult(404), th)
	}
	if unverified.InService() {
		t.Fatal("refusals readmitted a passively ejected backend")
	}
	if got := (Health{State: StateUnknown}).Eject().Readmit(); got.State != StateUnknown || !got.InService() {
		t.Errorf("Readmit of an unprobed backend: %+v, want unknown and in service", got)
	}
}
