package vantage

import (
	"slices"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/maintenance/store"
)

// Bounds of the verdicts held: a peer's writes are hostile, and the
// store's own bound holds for its reads only, not for the changes a watch
// brings after them.
const (
	// maxVerdictsPerBackend is as many as there can be live replicas
	// (store.MaxViews): no more can speak about one backend.
	maxVerdictsPerBackend = store.MaxViews
	// maxVerdicts is the store's bound of one read.
	maxVerdicts = store.MaxVerdictKeys
)

// published are the verdicts the replicas published, as the store's
// watch hands them on: per backend, each replica's latest. A verdict that
// does not decode is dropped (a peer's bytes are hostile), and so is one
// beyond the bounds above; the key of a replica whose lease ended is
// deleted by the store, and with it its verdicts here.
type published struct {
	byBackend map[string][]fleet.Vantage
	// n is how many verdicts byBackend holds.
	n int
}

func newPublished() published {
	return published{byBackend: map[string][]fleet.Vantage{}}
}

// apply folds one update of the watch in, marks in changed the backends
// whose verdicts changed (every one known before and after on a Reset),
// and returns how many values were dropped (not decoding, or beyond the
// bounds) and whether a replica that had verdicts has none left after a
// deletion: the sign of its lease ending, or of its leaving.
func (p *published) apply(u store.VerdictUpdate, changed map[string]struct{}) (dropped int, emptied bool) {
	if u.Reset {
		for backend := range p.byBackend {
			changed[backend] = struct{}{}
		}
		clear(p.byBackend)
		p.n = 0
	}
	deleted := map[string]struct{}{}
	for _, sv := range u.Verdicts {
		changed[sv.Backend] = struct{}{}
		if sv.Value == nil {
			p.remove(sv.Backend, sv.Replica)
			deleted[sv.Replica] = struct{}{}
			continue
		}
		v, err := fleet.Decode(sv.Value)
		if err != nil || !p.put(sv.Backend, fleet.Vantage{Replica: sv.Replica, Verdict: v}) {
			dropped++
			p.remove(sv.Backend, sv.Replica)
		}
	}
	for replica := range deleted {
		if !p.has(replica) {
			emptied = true
		}
	}
	return dropped, emptied
}

// put keeps v as its replica's verdict of backend, and reports false,
// keeping nothing, when that would be one verdict too many.
func (p *published) put(backend string, v fleet.Vantage) bool {
	vs := p.byBackend[backend]
	if i := slices.IndexFunc(vs, func(o fleet.Vantage) bool { return o.Replica == v.Replica }); i >= 0 {
		vs[i] = v
		return true
	}
	if len(vs) >= maxVerdictsPerBackend || p.n >= maxVerdicts {
		return false
	}
	p.byBackend[backend] = append(vs, v)
	p.n++
	return true
}

func (p *published) remove(backend, replica string) {
	vs := p.byBackend[backend]
	kept := slices.DeleteFunc(vs, func(o fleet.Vantage) bool { return o.Replica == replica })
	p.n -= len(vs) - len(kept)
	if len(kept) == 0 {
		delete(p.byBackend, backend)
		return
	}
	p.byBackend[backend] = kept
}

// has reports whether replica has a verdict about any backend.
func (p *published) has(replica string) bool {
	for _, vs := range p.byBackend {
		if slices.ContainsFunc(vs, func(v fleet.Vantage) bool { return v.Replica == replica }) {
			return true
		}
	}
	return false
}

// live appends to dst the verdicts about backend of the live replicas
// but self: only a replica whose view lives speaks for the fleet.
func (p *published) live(dst []fleet.Vantage, backend, self string, members fleet.Members) []fleet.Vantage {
	for _, v := range p.byBackend[backend] {
		if v.Replica != self && members.Has(v.Replica) {
			dst = append(dst, v)
		}
	}
	return dst
}
