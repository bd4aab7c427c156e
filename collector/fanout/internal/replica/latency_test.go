package replica

import (
	"testing"
	"time"
)

var epoch = time.Unix(1_700_000_000, 0)

func TestLatency(t *testing.T) {
	type observation struct {
		at   time.Duration
		took time.Duration
	}
	for _, c := range []struct {
		name string
		seen []observation
		want time.Duration
	}{
		{"nothing measured", nil, 0},
		{"the first answer is the average", []observation{{0, 10 * ms}}, 10 * ms},
		{"after a half-life, half and half", []observation{{0, 10 * ms}, {HalfLife, 30 * ms}}, 20 * ms},
		{"after two half-lives, a quarter of the old", []observation{{0, 10 * ms}, {2 * HalfLife, 50 * ms}}, 40 * ms},
		{"after a long silence, the new answer", []observation{{0, 10 * ms}, {60 * time.Second, 50 * ms}}, 50 * ms},
		{"at the same instant, nothing new", []observation{{0, 10 * ms}, {0, 50 * ms}}, 10 * ms},
		{"out of order, nothing new", []observation{{time.Second, 10 * ms}, {0, 50 * ms}}, 10 * ms},
		{"out of order does not move the newest back", []observation{{HalfLife, 10 * ms}, {0, 50 * ms}, {2 * HalfLife, 30 * ms}}, 20 * ms},
		{"no time at all counts as a nanosecond", []observation{{0, 0}}, 1},
		{"negative counts as a nanosecond", []observation{{0, -time.Second}}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l Latency
			for _, o := range c.seen {
				l.Observe(epoch.Add(o.at), o.took)
			}
			if got := l.Value(); got < c.want-1 || got > c.want+1 {
				t.Errorf("Value() = %v, want %v", got, c.want)
			}
		})
	}
}

// TestLatencyForgetsWithinSeconds follows a replica answering 100 times a
// second in 5ms that starts answering in 50ms: the average is halfway
// there after a half-life and all but there within seconds, however many
// fast answers came before; the zero time is a time like any other.
func TestLatencyForgetsWithinSeconds(t *testing.T) {
	var l Latency
	at := time.Time{}
	for range 100_000 {
		at = at.Add(10 * ms)
		l.Observe(at, 5*ms)
	}
	checks := []struct {
		after time.Duration
		least time.Duration
		most  time.Duration
	}{
		{HalfLife, 27 * ms, 28 * ms},
		{5 * HalfLife, 48 * ms, 50 * ms},
	}
	changed := at
	for _, c := range checks {
		for at.Sub(changed) < c.after {
			at = at.Add(10 * ms)
			l.Observe(at, 50*ms)
		}
		if got := l.Value(); got < c.least || got > c.most {
			t.Errorf("%v after the change: %v, want between %v and %v", c.after, got, c.least, c.most)
		}
	}
}
