package vantage

import (
	"slices"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/maintenance/store"
)

// published are the verdicts the replicas published, as the store's
// watch hands them on: per backend, each replica's latest. A verdict that
// does not decode is dropped (a peer's bytes are hostile); the key of a
// replica whose lease ended is deleted by the store, and with it its
// verdicts here.
type published map[string][]fleet.Vantage

// apply folds one update of the watch in, marks in changed the backends
// whose verdicts changed (every one known before and after on a Reset),
// and returns how many values did not decode and whether a replica that
// had verdicts has none left after a deletion: the sign of its lease
// ending, or of its leaving.
func (p published) apply(u store.VerdictUpdate, changed map[string]struct{}) (malformed int, emptied bool) {
	if u.Reset {
		for backend := range p {
			changed[backend] = struct{}{}
		}
		clear(p)
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
		if err != nil {
			malformed++
			p.remove(sv.Backend, sv.Replica)
			continue
		}
		p.put(sv.Backend, fleet.Vantage{Replica: sv.Replica, Verdict: v})
	}
	for replica := range deleted {
		if !p.has(replica) {
			emptied = true
		}
	}
	return malformed, emptied
}

// has reports whether replica has a verdict about any backend.
func (p published) has(replica string) bool {
	for _, vs := range p {
		if slices.ContainsFunc(vs, func(v fleet.Vantage) bool { return v.Replica == replica }) {
			return true
		}
	}
	return false
}

func (p published) put(backend string, v fleet.Vantage) {
	vs := p[backend]
	if i := slices.IndexFunc(vs, func(o fleet.Vantage) bool { return o.Replica == v.Replica }); i >= 0 {
		vs[i] = v
		return
	}
	p[backend] = append(vs, v)
}

func (p published) remove(backend, replica string) {
	vs := slices.DeleteFunc(p[backend], func(o fleet.Vantage) bool { return o.Replica == replica })
	if len(vs) == 0 {
		delete(p, backend)
		return
	}
	p[backend] = vs
}

// live appends to dst the verdicts about backend of the live replicas
// but self: only a replica whose view lives speaks for the fleet.
func (p published) live(dst []fleet.Vantage, backend, self string, members fleet.Members) []fleet.Vantage {
	for _, v := range p[backend] {
		if v.Replica != self && members.Has(v.Replica) {
			dst = append(dst, v)
		}
	}
	return dst
}
