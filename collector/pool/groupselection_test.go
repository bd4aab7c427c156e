package pool

import (
	"fmt"
	"slices"
	"testing"

	"github.com/probegate/probegate/collector/entries"
)

// TestGroupSelectionSelectsByGroup: the groups come in configuration
// order of their first member, a backend without a group a group of its
// own named after it, each with its replicas in service selected and the
// others skipped, in configuration order.
func TestGroupSelectionSelectsByGroup(t *testing.T) {
	p := newPool(t, groupedTargets("s1", "s2", "s1", "", "s2"), Settings{})
	enter(p, entries.Entry{Backend: "b2", Reason: "disk"})
	feed(p.Backends()[4], downResult, defaultProbe.Failures)
	groups, grouped, failOpen := p.GroupSelection()
	if !grouped || failOpen {
		t.Errorf("grouped %v, failOpen %v; want grouped, not failing open", grouped, failOpen)
	}
	want := []struct {
		name              string
		selected, skipped []string
	}{
		{"s1", []string{"b0"}, []string{"b2"}},
		{"s2", []string{"b1"}, []string{"b4"}},
		{"b3", []string{"b3"}, nil},
	}
	if len(groups) != len(want) {
		t.Fatalf("%d groups %+v; want %d", len(groups), groups, len(want))
	}
	for i, w := range want {
		g := groups[i]
		if g.Name != w.name || !slices.Equal(names(g.Selected), w.selected) || !slices.Equal(names(g.Skipped), w.skipped) {
			t.Errorf("group %d: %s selected %v skipped %v; want %s selected %v skipped %v",
				i, g.Name, names(g.Selected), names(g.Skipped), w.name, w.selected, w.skipped)
		}
	}
}

// TestGroupSelectionWithoutGroupsIsSelection: a pool where no backend was
// given a group has one group per backend, selected as Selection selects,
// fail-open included.
func TestGroupSelectionWithoutGroupsIsSelection(t *testing.T) {
	p := newPool(t, groupedTargets("", "", ""), Settings{PanicThreshold: 50})
	feed(p.Backends()[0], downResult, defaultProbe.Failures)
	feed(p.Backends()[1], downResult, defaultProbe.Failures)
	enter(p, entries.Entry{Backend: "b2", Reason: "disk"})
	groups, grouped, failOpen := p.GroupSelection()
	selected, skipped, _, selectionFailsOpen := p.Selection()
	if grouped || !failOpen || !selectionFailsOpen {
		t.Fatalf("grouped %v, failOpen %v (Selection %v); want no groups, failing open", grouped, failOpen, selectionFailsOpen)
	}
	var bySelection, byGroups []string
	for _, g := range groups {
		if len(g.Selected)+len(g.Skipped) != 1 {
			t.Errorf("group %s has %d replicas; want 1", g.Name, len(g.Selected)+len(g.Skipped))
		}
		byGroups = append(byGroups, names(g.Selected)...)
	}
	bySelection = names(selected)
	if !slices.Equal(byGroups, bySelection) || len(skipped) != 1 || skipped[0].Name != "b2" {
		t.Errorf("groups select %v, Selection %v skipping %v; want the same, b2 in maintenance skipped", byGroups, bySelection, names(skipped))
	}
}

// TestUngroupedSelectionOutlivesItsPool: without groups a group's replica
// is a window on the pool's backends, so a round's selection must stay
// what it was when the pool is reloaded meanwhile, and a round appending
// to a group must not write into the pool.
func TestUngroupedSelectionOutlivesItsPool(t *testing.T) {
	p := newPool(t, groupedTargets("", "", ""), Settings{})
	groups, _, _ := p.GroupSelection()
	_ = append(groups[0].Selected, groups[2].Selected[0])
	if got := names(p.Backends()); !slices.Equal(got, []string{"b0", "b1", "b2"}) {
		t.Fatalf("appending to group b0 made the pool %v", got)
	}
	reloaded := namedTargets("c0", "c1", "c2")
	if err := p.Apply(reloaded, Settings{}); err != nil {
		t.Fatal(err)
	}
	for i, g := range groups {
		if want := fmt.Sprintf("b%d", i); g.Name != want || len(g.Selected) != 1 || g.Selected[0].Name != want {
			t.Errorf("after a reload, group %d is %s selecting %v; want %s selecting itself", i, g.Name, names(g.Selected), want)
		}
	}
}

// TestUngroupedSelectionAllocatesAsSelection: every fan-out round asks
// for the selection, so that of a pool without groups allocates no more
// than Selection, which the rounds asked for before there were groups.
func TestUngroupedSelectionAllocatesAsSelection(t *testing.T) {
	p := newPool(t, groupedTargets("", "", ""), Settings{})
	byGroups := testing.AllocsPerRun(100, func() { p.GroupSelection() })
	bySelection := testing.AllocsPerRun(100, func() { p.Selection() })
	if byGroups > bySelection {
		t.Errorf("GroupSelection of a pool without groups allocates %v times, Selection %v", byGroups, bySelection)
	}
}
