package hedge

import (
	"testing"
	"time"
)

func TestDelayFor(t *testing.T) {
	auto := Delay{Auto: true, MinAfter: 10 * ms, Timeout: 30 * time.Second}
	for _, c := range []struct {
		name   string
		delay  Delay
		recent *Window
		want   time.Duration
		wantOK bool
	}{
		{"auto, no window: timeout", auto, nil, 30 * time.Second, false},
		{"auto, nineteen answers: timeout", auto, record(run{19, 50 * ms}), 30 * time.Second, false},
		{"auto, twenty answers: p95", auto, record(run{20, 50 * ms}), 50 * ms, true},
		{"auto, fast answers: min_after", auto, record(run{100, ms}), 10 * ms, true},
		{"auto, p95 of the tail", auto, record(run{900, 5 * ms}, run{100, 300 * ms}), 300 * ms, true},
		{"auto, p95 past the timeout", Delay{Auto: true, Timeout: 100 * ms}, record(run{20, time.Second}), time.Second, false},
		{"auto, no timeout, too few answers", Delay{Auto: true}, record(run{3, ms}), 0, false},
		{"auto, no timeout", Delay{Auto: true}, record(run{30, 40 * ms}), 40 * ms, true},
		{"fixed", Delay{After: 20 * ms, MinAfter: 10 * ms, Timeout: time.Second}, nil, 20 * ms, true},
		{"fixed ignores the window", Delay{After: 20 * ms, Timeout: time.Second}, record(run{100, 500 * ms}), 20 * ms, true},
		{"fixed below min_after", Delay{After: 2 * ms, MinAfter: 10 * ms, Timeout: time.Second}, nil, 10 * ms, true},
		{"fixed at the timeout", Delay{After: time.Second, Timeout: time.Second}, nil, time.Second, false},
		{"fixed, no timeout", Delay{After: time.Minute}, nil, time.Minute, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := c.delay.For(c.recent)
			if ok != c.wantOK || !within(got, c.want) {
				t.Errorf("For() = %v, %v; want %v (or up to 1/16 above), %v", got, ok, c.want, c.wantOK)
			}
		})
	}
}
