package fleet

import (
	"slices"
	"time"

	"github.com/probegate/probegate/collector/health"
)

// DissentIntervals is how many probe intervals a vantage point must
// disagree alone with a backend's verdict before it is named: long enough
// that a vantage point merely a probe or two ahead of the others (a
// backend going down or coming back) is not named for it.
const DissentIntervals = 3

// Dissent is what the fleet's verdict on one backend remembers from one
// judgement to the next: the vantage point disagreeing alone with it, and
// since when. The caller keeps one per backend; the zero Dissent is none.
type Dissent struct {
	// Replica is the vantage point disagreeing alone; empty for none.
	Replica string
	// Since is when the judgement first saw Replica disagree alone.
	Since time.Time
	// Named is set once Replica has disagreed for longer than
	// DissentIntervals probe intervals, so that it is counted once.
	Named bool
}

// Judgement is a decision with what it found of dissent.
type Judgement struct {
	Decision
	// Dissenter is the vantage point that has disagreed alone with the
	// verdict for longer than DissentIntervals probe intervals, empty
	// for none: the caller shows it, and it ejects nothing anywhere.
	Dissenter string
	// NewDissenter is set on the one judgement that first names this
	// dissent's Dissenter: the caller counts a disagreement
	// (probegate_vantage_disagreements_total{replica}) once for it.
	NewDissenter bool
}

// Step judges a backend as Decide does, from the live verdicts of its
// vantage points, and follows the dissent among them: a vantage point
// whose word (unhealthy or not) differs from the verdict while every
// other live vantage point's agrees with it. With two vantage points
// that disagree it is the one saying unhealthy, since the verdict keeps
// the backend in service; one vantage point alone is no dissent, nor are
// two against two. now is the time of this judgement and interval the
// backend's probe interval. Step returns the judgement and the Dissent to
// pass to the next one.
func (d Dissent) Step(vantagePoints []string, published []Vantage, now time.Time, interval time.Duration) (Judgement, Dissent) {
	counted := func(replica string) bool { return slices.Contains(vantagePoints, replica) }
	j := Judgement{Decision: tally(published, counted, len(vantagePoints))}
	lone := loneDissenter(j.Decision, published, counted)
	switch {
	case lone == "":
		return j, Dissent{}
	case lone != d.Replica:
		d = Dissent{Replica: lone, Since: now}
	}
	if now.Sub(d.Since) > DissentIntervals*interval {
		j.Dissenter = lone
		j.NewDissenter = !d.Named
		d.Named = true
	}
	return j, d
}

// loneDissenter is the one counted replica among published whose word
// differs from decision's, and empty when there is none or more than one,
// or fewer than two live verdicts to disagree.
func loneDissenter(decision Decision, published []Vantage, counted func(replica string) bool) string {
	if decision.Live < 2 {
		return ""
	}
	lone := ""
	for i, v := range published {
		if !counts(published, i, counted) || (v.Verdict.State == health.StateUnhealthy) == decision.OutOfService {
			continue
		}
		if lone != "" {
			return ""
		}
		lone = v.Replica
	}
	return lone
}
