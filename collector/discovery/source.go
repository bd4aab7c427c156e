package discovery

import (
	"cmp"
	"container/heap"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery/targetgroup"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/redact"
)

// record is one discovered target and what became of it: the backend it
// made, or why it was dropped. It refers to the discovered labels rather
// than copying them: they are built for the view only when asked for.
type record struct {
	source     string
	tally      *tally
	group, own model.LabelSet
	target     pool.Target // the backend, when not dropped
	reason     string      // why it was dropped, or ""
	err        string      // the redacted report of an invalid target
	// cause is why an invalid target is not a backend, for a report that
	// locates it by line once the view reads the line.
	cause error
}

// labels are the target's labels before relabelling, its own over its
// group's, with every password in them redacted.
func (r *record) labels() map[string]string {
	out := make(map[string]string, len(r.group)+len(r.own))
	for n, v := range r.group {
		out[string(n)] = redact.Userinfo(string(v))
	}
	for n, v := range r.own {
		out[string(n)] = redact.Userinfo(string(v))
	}
	return out
}

// source is what one mechanism's targets came to at one update: the
// backends (at most max_discovered_backends, sorted by name), how many
// were dropped for each reason, and each source's share (tallies). Its
// size is bounded whatever the number of targets.
type source struct {
	mechanism string
	total     int
	backends  []*record
	counts    map[string]int
	// examples are the reports of the first invalid targets.
	examples []string
	// tallies are the mechanism's sources, in the order of the
	// configuration, then of their files.
	tallies []*tally
}

// drop records r as dropped for reason.
func (s *source) drop(r *record, reason string) {
	r.reason = reason
	s.counts[reason]++
	r.tally.drop(r)
}

// origin is where a target group came from: a block of the configuration
// (its field, such as file_sd_configs[0], and its place among the blocks)
// and, for a mechanism that reads files, the file.
type origin struct {
	field string
	index int
	file  string
}

// tally is one source's share of a mechanism's targets, for the view. A
// source is one *_sd_configs block, or one file of a block for a mechanism
// that reads files, so that a source dropping thousands of targets crowds
// out no other's.
type tally struct {
	origin
	total  int
	counts map[string]int
	// dropped are the first maxShownDropped dropped targets, and beyond
	// them the first of every other reason: each reason present keeps an
	// example.
	dropped []*record
}

// drop records r, dropped, in the tally.
func (t *tally) drop(r *record) {
	t.counts[r.reason]++
	if len(t.dropped) < maxShownDropped || t.counts[r.reason] == 1 {
		t.dropped = append(t.dropped, r)
	}
}

// mechanismGroups are a mechanism's target groups and where each came
// from, and the blocks of it the configuration holds, each a source even
// before it finds a target.
type mechanismGroups struct {
	groups []*targetgroup.Group
	// origins are the groups' origins; a group without one is the
	// mechanism's as a whole.
	origins map[*targetgroup.Group]origin
	blocks  []origin
	// alsoKeptBy are groups that stand in for a block not yet reported
	// (Discovery.groupsOf): each of their targets must be kept by this
	// configuration too.
	alsoKeptBy map[*targetgroup.Group]*config.Config
}

// evaluate is evaluateGroups for groups of no particular origin.
func evaluate(mechanism string, groups []*targetgroup.Group, cfg *config.Config, isLoop func(string) bool) *source {
	return evaluateGroups(mechanism, mechanismGroups{groups: groups}, cfg, isLoop)
}

// evaluateGroups relabels every target of a mechanism's groups and makes
// what it can a backend. A target that relabelling drops, that is not a
// backend, or that isLoop (when set) reports as pointing at probegate
// itself, is dropped; of the rest the limit first by name become
// backends and the others are dropped too. Memory stays bounded by the
// limit and maxShownDropped per source, however many targets the groups
// hold.
func evaluateGroups(mechanism string, in mechanismGroups, cfg *config.Config, isLoop func(string) bool) *source {
	groups := slices.DeleteFunc(slices.Clone(in.groups), func(g *targetgroup.Group) bool { return g == nil })
	slices.SortFunc(groups, func(a, b *targetgroup.Group) int { return cmp.Compare(a.Source, b.Source) })
	s := &source{mechanism: mechanism, counts: make(map[string]int, len(dropReasons))}
	tallies := map[origin]*tally{}
	tallyOf := func(o origin) *tally {
		t := tallies[o]
		if t == nil {
			t = &tally{origin: o, counts: make(map[string]int, len(dropReasons))}
			tallies[o] = t
			s.tallies = append(s.tallies, t)
		}
		return t
	}
	for _, o := range in.blocks {
		tallyOf(o)
	}
	limit := max(cfg.MaxDiscoveredBackends, 0)
	kept := &byNameDesc{}
	lb := labels.NewBuilder(labels.EmptyLabels())
	for _, g := range groups {
		o, ok := in.origins[g]
		if !ok {
			o = origin{field: mechanism}
		}
		t := tallyOf(o)
		for _, own := range g.Targets {
			s.total++
			t.total++
			r := &record{source: g.Source, tally: t, group: g.Labels, own: own}
			target, keep, err := makeTarget(lb, g.Labels, own, cfg)
			if other := in.alsoKeptBy[g]; other != nil && err == nil && keep {
				if _, keptToo, errToo := makeTarget(lb, g.Labels, own, other); errToo != nil || !keptToo {
					keep = false
				}
			}
			switch {
			case err != nil:
				// Only a report that is kept is written: formatting a
				// million would cost more than the rest.
				if len(s.examples) < maxExamples || len(t.dropped) < maxShownDropped || t.counts[dropInvalid] == 0 {
					r.err = invalidTarget(own, groupPlace(g.Source, t.file), err).Error()
					r.cause = err
				}
				if len(s.examples) < maxExamples {
					s.examples = append(s.examples, r.err)
				}
				s.drop(r, dropInvalid)
			case !keep:
				s.drop(r, dropRelabel)
			case isLoop != nil && isLoop(target.URL):
				s.drop(r, dropLoop)
			default:
				r.target = target
				heap.Push(kept, r)
				if kept.Len() > limit {
					s.drop(heap.Pop(kept).(*record), dropLimit)
				}
			}
		}
	}
	s.backends = *kept
	slices.SortFunc(s.backends, compareRecords)
	// A block stands for itself only until its files list targets.
	s.tallies = slices.DeleteFunc(s.tallies, func(t *tally) bool {
		return t.file == "" && t.total == 0 && slices.ContainsFunc(s.tallies, func(other *tally) bool { return other.field == t.field && other.file != "" })
	})
	slices.SortFunc(s.tallies, func(a, b *tally) int {
		return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(a.file, b.file))
	})
	return s
}

// compareRecords orders backends by name, then URL, so that the limit
// keeps the same ones at every update.
func compareRecords(a, b *record) int {
	return cmp.Or(cmp.Compare(a.target.Name, b.target.Name), cmp.Compare(a.target.URL, b.target.URL))
}

// byNameDesc is a heap of backends whose top is the last by name: the one
// the limit drops first.
type byNameDesc []*record

func (h byNameDesc) Len() int           { return len(h) }
func (h byNameDesc) Less(i, j int) bool { return compareRecords(h[i], h[j]) > 0 }
func (h byNameDesc) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *byNameDesc) Push(x any)        { *h = append(*h, x.(*record)) }
func (h *byNameDesc) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}
