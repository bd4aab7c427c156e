package fleet

import (
	"testing"
	"time"
)

func TestDissent(t *testing.T) {
	const interval = 10 * time.Second
	ab, abc := []string{"a", "b"}, []string{"a", "b", "c"}
	type step struct {
		after     time.Duration
		vantage   []string
		published []Vantage
		dissenter string
		counted   bool
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"the one of two saying unhealthy, named after three intervals, counted once", []step{
			{0, ab, said("a", unhealthy, "b", healthy), "", false},
			{30 * time.Second, ab, said("a", unhealthy, "b", healthy), "", false},
			{30*time.Second + time.Millisecond, ab, said("a", unhealthy, "b", healthy), "a", true},
			{time.Minute, ab, said("a", unhealthy, "b", healthy), "a", false},
		}},
		{"a vantage point a probe ahead of the other is not named", []step{
			{0, ab, said("a", healthy, "b", healthy), "", false},
			{10 * time.Second, ab, said("a", unhealthy, "b", healthy), "", false},
			{20 * time.Second, ab, said("a", unhealthy, "b", unhealthy), "", false},
			{50 * time.Second, ab, said("a", unhealthy, "b", unhealthy), "", false},
		}},
		{"agreement ends a dissent; the next is counted again", []step{
			{0, ab, said("a", unhealthy, "b", healthy), "", false},
			{40 * time.Second, ab, said("a", unhealthy, "b", healthy), "a", true},
			{50 * time.Second, ab, said("a", healthy, "b", healthy), "", false},
			{60 * time.Second, ab, said("a", unhealthy, "b", healthy), "", false},
			{100 * time.Second, ab, said("a", unhealthy, "b", healthy), "a", true},
		}},
		{"another dissenter starts its own clock", []step{
			{0, abc, said("a", unhealthy, "b", healthy, "c", healthy), "", false},
			{20 * time.Second, abc, said("a", healthy, "b", unhealthy, "c", healthy), "", false},
			{45 * time.Second, abc, said("a", healthy, "b", unhealthy, "c", healthy), "", false},
			{51 * time.Second, abc, said("a", healthy, "b", unhealthy, "c", healthy), "b", true},
		}},
		{"of three, the one saying healthy against an out-of-service verdict", []step{
			{0, abc, said("a", unhealthy, "b", healthy, "c", unhealthy), "", false},
			{31 * time.Second, abc, said("a", unhealthy, "b", healthy, "c", unhealthy), "b", true},
		}},
		{"two against two is no lone dissent", []step{
			{0, []string{"a", "b", "c", "d"}, said("a", unhealthy, "b", healthy, "c", unhealthy, "d", healthy), "", false},
			{time.Hour, []string{"a", "b", "c", "d"}, said("a", unhealthy, "b", healthy, "c", unhealthy, "d", healthy), "", false},
		}},
		{"one live verdict is no dissent", []step{
			{0, ab, said("a", unhealthy), "", false},
			{time.Hour, ab, said("a", unhealthy), "", false},
		}},
		{"a dissent by a replica that lost the backend ends", []step{
			{0, ab, said("a", unhealthy, "b", healthy), "", false},
			{40 * time.Second, ab, said("a", unhealthy, "b", healthy), "a", true},
			{50 * time.Second, []string{"b", "c"}, said("a", unhealthy, "b", healthy), "", false},
		}},
		{"a clock that went back names nobody early", []step{
			{time.Hour, ab, said("a", unhealthy, "b", healthy), "", false},
			{0, ab, said("a", unhealthy, "b", healthy), "", false},
			{time.Hour + 31*time.Second, ab, said("a", unhealthy, "b", healthy), "a", true},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var d Dissent
			for i, s := range c.steps {
				var j Judgement
				j, d = d.Step(s.vantage, s.published, at(0).Add(s.after), interval)
				if j.Decision != Decide(s.vantage, s.published) {
					t.Fatalf("step %d: decision %+v; Decide says %+v", i, j.Decision, Decide(s.vantage, s.published))
				}
				if j.Dissenter != s.dissenter || j.NewDissenter != s.counted {
					t.Fatalf("step %d at %v: dissenter %q (new %v); want %q (new %v)", i, s.after, j.Dissenter, j.NewDissenter, s.dissenter, s.counted)
				}
			}
		})
	}
}
