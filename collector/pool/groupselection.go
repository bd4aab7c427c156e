package pool

import "github.com/probegate/probegate/collector/health"

// SelectedGroup is one replica group as a fan-out round sees it: its
// replicas that may be asked (Selected) and those that may not (Skipped),
// each in configuration order.
type SelectedGroup struct {
	// Name is the group's name (Backend.Group).
	Name     string
	Selected []*Backend
	Skipped  []*Backend
}

// GroupSelection is Selection by replica group: the pool's groups in
// configuration order of their first member, each with its replicas
// selected and skipped under the same rule, fail-open included. grouped
// reports whether any backend was given a group; without one, every
// group is one backend and the groups are Selection's backends.
func (p *Pool) GroupSelection() (groups []SelectedGroup, grouped, failOpen bool) {
	p.catchUp(p.now())
	p.mu.RLock()
	defer p.mu.RUnlock()
	selected, failOpen := p.selectLocked()
	if !p.groupedLocked() {
		return p.ungroupedSelectionLocked(selected), false, failOpen
	}
	names, of := groupOrder(p.backends)
	groups = make([]SelectedGroup, len(names))
	for j, name := range names {
		groups[j].Name = name
	}
	// Every round asks for this, so the groups' replicas share one array,
	// cut into each group's Selected and Skipped (counted first): a
	// handful of allocations whatever the number of groups.
	count := make([]int, 2*len(groups))
	for i := range p.backends {
		j := 2 * of[i]
		if !selected[i] {
			j++
		}
		count[j]++
	}
	members := make([]*Backend, len(p.backends))
	next := 0
	for j := range groups {
		g := &groups[j]
		n, m := count[2*j], count[2*j+1]
		g.Selected, next = members[next:next:next+n], next+n
		g.Skipped, next = members[next:next:next+m], next+m
	}
	for i, b := range p.backends {
		g := &groups[of[i]]
		if selected[i] {
			g.Selected = append(g.Selected, b)
		} else {
			g.Skipped = append(g.Skipped, b)
		}
	}
	return groups, true, failOpen
}

// ungroupedSelectionLocked is GroupSelection of a pool where no backend
// has a group: every backend a group of its own, in configuration order.
// A group's one replica is a window of one on the pool's backends, which
// Apply replaces and never changes in place, so that a round of such a
// pool allocates only its groups. The caller holds mu.
func (p *Pool) ungroupedSelectionLocked(selected []bool) []SelectedGroup {
	groups := make([]SelectedGroup, len(p.backends))
	for i, b := range p.backends {
		g := &groups[i]
		g.Name = b.Group()
		if one := p.backends[i : i+1 : i+1]; selected[i] {
			g.Selected = one
		} else {
			g.Skipped = one
		}
	}
	return groups
}

// selectLocked tells which of the pool's backends a fan-out round may
// ask: those in service, or while the pool fails open every backend not
// in maintenance. The caller holds mu.
func (p *Pool) selectLocked() (selected []bool, failOpen bool) {
	selected = make([]bool, len(p.backends))
	inService := 0
	for i, b := range p.backends {
		if b.Served().InService() {
			selected[i] = true
			inService++
		}
	}
	if !failsOpen(inService, len(p.backends), p.settings.PanicThreshold) {
		return selected, false
	}
	// Fail-open sends traffic to unhealthy backends, never to one an
	// operator took out for maintenance.
	for i, b := range p.backends {
		selected[i] = b.Served().Overlay != health.OverlayMaintenance
	}
	return selected, true
}
