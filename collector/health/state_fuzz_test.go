package health

import "testing"

// fuzzResults is the alphabet a fuzzed byte picks from: every class and
// reason, answered and not.
var fuzzResults = []string{"200", "302", "404", "501", "429", "500", "503", "timeout", "error"}

// FuzzStateMachine feeds random result sequences through Step and checks
// the state machine's invariants against counts the test keeps itself.
func FuzzStateMachine(f *testing.F) {
	f.Add(uint8(3), uint8(2), []byte{0, 0, 2, 2, 2, 6, 2, 2, 2, 2, 0, 0})
	f.Add(uint8(3), uint8(2), []byte{2, 6, 2, 6, 2, 6})
	f.Add(uint8(1), uint8(1), []byte{7, 8, 7, 0, 4, 3, 5, 1})
	f.Add(uint8(5), uint8(3), []byte{2, 2, 7, 2, 8, 8, 2, 2, 2, 2, 2})
	f.Add(uint8(2), uint8(4), []byte{8, 8, 8, 8, 0, 0, 0, 0, 6, 2, 2, 2})
	f.Fuzz(func(t *testing.T, failures, successes uint8, seq []byte) {
		th := Thresholds{Failures: int(failures%6) + 1, Successes: int(successes%6) + 1}
		results := parseInputs(t, fuzzResults...)
		var h Health
		// The test keeps its own counts, from the definitions in docs/design.md,
		// and checks Step's decisions against them.
		notOK, unanswered, good, verified, onlyRefused := 0, 0, 0, false, true
		for i, b := range seq {
			r := results[int(b)%len(results)]
			prev := h
			h = h.Step(r, th)

			if r.Class == ClassOK {
				notOK = 0
			} else {
				notOK++
			}
			if r.Answered() {
				unanswered = 0
			} else {
				unanswered++
			}
			verified = verified || r.Class == ClassOK || (r.Class == ClassFailed && r.Answered())
			if r.Class == ClassOK || (!verified && r.Class == ClassRefused) {
				good++
			} else {
				good = 0
			}
			onlyRefused = onlyRefused && r.Class == ClassRefused
			mustEject := (verified && notOK >= th.Failures) || (!verified && unanswered >= th.Failures)

			if h.Verified != verified {
				t.Fatalf("probe %d: Verified %v, but the history says %v", i, h.Verified, verified)
			}
			if h.InService() && mustEject {
				t.Fatalf("probe %d: still in service with %d non-ok and %d unanswered in a row (verified %v, failures %d)", i, notOK, unanswered, verified, th.Failures)
			}
			if !prev.InService() && h.InService() && good < th.Successes {
				t.Fatalf("probe %d: readmitted after %d results that count, want %d", i, good, th.Successes)
			}
			if !h.InService() && good >= th.Successes {
				t.Fatalf("probe %d: still out of service after %d results that count, want readmission at %d", i, good, th.Successes)
			}
			if h.InService() && r.Class == ClassOK && h.State != StateHealthy {
				t.Fatalf("probe %d: in service after an ok result but %v, want healthy", i, h.State)
			}
			if h.InService() && !verified && r.Class == ClassRefused && h.State != StateProbeUnsupported {
				t.Fatalf("probe %d: in service, unverified, refused, but %v, want probe_unsupported", i, h.State)
			}
			if prev.InService() && !h.InService() && !mustEject {
				t.Fatalf("probe %d: ejected without cause (%d non-ok, %d unanswered, verified %v)", i, notOK, unanswered, verified)
			}

			if h.State >= NumStates {
				t.Fatalf("probe %d: invalid state %d", i, h.State)
			}
			if h.InService() != (h.State != StateUnhealthy) {
				t.Fatalf("probe %d: in service %v in state %v", i, h.InService(), h.State)
			}
			if prev.Verified && !h.Verified {
				t.Fatalf("probe %d: the verification latch cleared", i)
			}
			if prev.State != StateUnhealthy && h.State == StateUnhealthy && h.Verified && notOK < th.Failures {
				t.Fatalf("probe %d: verified backend ejected after %d consecutive non-ok results, want at least %d", i, notOK, th.Failures)
			}
			if onlyRefused && h.State == StateUnhealthy {
				t.Fatalf("probe %d: a refused-only history ejected the backend", i)
			}
			if h.NotOK != notOK {
				t.Fatalf("probe %d: NotOK %d, counted %d", i, h.NotOK, notOK)
			}
		}
	})
}
