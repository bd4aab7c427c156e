package traffic

import (
	"slices"
	"testing"
)

// TestReasonsNameEveryReasonOnce: the pre-initialised series take their
// labels from Reasons, so it lists each reason once, in order, under its
// own label value.
func TestReasonsNameEveryReasonOnce(t *testing.T) {
	var names []string
	for i, r := range Reasons() {
		if r != Reason(i) {
			t.Fatalf("reason %d is %d", i, r)
		}
		names = append(names, r.String())
	}
	want := []string{"timeout", "transport", "http_4xx", "http_429", "http_5xx", "invalid_body", "too_large", "http_3xx", "local", "straggler"}
	if !slices.Equal(names, want) {
		t.Errorf("reasons %v, want %v", names, want)
	}
}
