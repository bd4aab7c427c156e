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
	group, own model.LabelSet
	target     pool.Target // the backend, when not dropped
	reason     string      // why it was dropped, or ""
	err        string      // the redacted report of an invalid target
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
// backends (at most max_discovered_backends, sorted by name), the first
// maxShownDropped dropped targets, and how many were dropped for each
// reason. Its size is bounded whatever the number of targets.
type source struct {
	mechanism string
	total     int
	backends  []*record
	dropped   []*record
	counts    map[string]int
	// examples are the reports of the first invalid targets.
	examples []string
}

// drop records r as dropped for reason.
func (s *source) drop(r *record, reason string) {
	r.reason = reason
	s.counts[reason]++
	if len(s.dropped) < maxShownDropped {
		s.dropped = append(s.dropped, r)
	}
}

// evaluate relabels every target of a mechanism's groups and makes what
// it can a backend. A target that relabelling drops, that is not a
// backend, or that isLoop (when set) reports as pointing at probegate
// itself, is dropped; of the rest the limit first by name become
// backends and the others are dropped too. Memory stays bounded by the
// limit and maxShownDropped, however many targets the groups hold.
func evaluate(mechanism string, groups []*targetgroup.Group, cfg *config.Config, isLoop func(string) bool) *source {
	groups = slices.DeleteFunc(slices.Clone(groups), func(g *targetgroup.Group) bool { return g == nil })
	slices.SortFunc(groups, func(a, b *targetgroup.Group) int { return cmp.Compare(a.Source, b.Source) })
	s := &source{mechanism: mechanism, counts: make(map[string]int, len(dropReasons))}
	limit := max(cfg.MaxDiscoveredBackends, 0)
	kept := &byNameDesc{}
	lb := labels.NewBuilder(labels.EmptyLabels())
	for _, g := range groups {
		for _, t := range g.Targets {
			s.total++
			r := &record{source: g.Source, group: g.Labels, own: t}
			target, keep, err := makeTarget(lb, g.Labels, t, cfg)
			switch {
			case err != nil:
				// Only a report that is kept is written: formatting a
				// million would cost more than the rest.
				if len(s.examples) < maxExamples || len(s.dropped) < maxShownDropped {
					r.err = invalidTarget(t, g.Source, err).Error()
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
