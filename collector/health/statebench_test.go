package health

import "testing"

// BenchmarkStep measures one state machine step (budget: 50 ns, 0 allocs).
func BenchmarkStep(b *testing.B) {
	results := parseInputs(b, "200", "404", "503", "timeout", "200", "200", "429", "error")
	th := Thresholds{Failures: 3, Successes: 2}
	var h Health
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		h = h.Step(results[i&7], th)
	}
	if h.State >= NumStates {
		b.Fatal("invalid state")
	}
}
