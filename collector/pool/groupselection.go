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
	grouped = p.groupedLocked()
	var of []int
	if grouped {
		var names []string
		names, of = groupOrder(p.backends)
		groups = make([]SelectedGroup, len(names))
		for j, name := range names {
			groups[j].Name = name
		}
	} else {
		groups = make([]SelectedGroup, len(p.backends))
		for i, b := range p.backends {
			groups[i].Name = b.Group()
		}
	}
	// Every round asks for this, so the groups' replicas share one array,
	// cut into each group's Selected and Skipped (counted first): a
	// handful of allocations whatever the number of groups.
	count := make([]int, 2*len(groups))
	for i := range p.backends {
		j := 2 * groupOf(of, i)
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
		g := &groups[groupOf(of, i)]
		if selected[i] {
			g.Selected = append(g.Selected, b)
		} else {
			g.Skipped = append(g.Skipped, b)
		}
	}
	return groups, grouped, failOpen
}

// groupOf is the number of backend i's group: of[i] from groupOrder, or
// i itself when no backend has a group (of is nil), each backend then a
// group of its own in configuration order.
func groupOf(of []int, i int) int {
	if of == nil {
		return i
	}
	return of[i]
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
