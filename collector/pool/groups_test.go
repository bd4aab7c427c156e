package pool

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/collector/budget"
	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/outlier"
	"github.com/probegate/probegate/config"
)

// maxUnavailableOne is readiness.per_group.max_unavailable: 1.
var maxUnavailableOne = config.GroupBudget{MaxUnavailable: &config.IntOrPercent{Value: 1}}

// groupedTargets are targets b0, b1, … in the groups given by index; an
// empty group leaves the backend a group of its own.
func groupedTargets(groups ...string) []Target {
	targets := numberedTargets(len(groups))
	for i, g := range groups {
		targets[i].Group = g
	}
	return targets
}

// unprobed turns the targets' probes off: only passive health's window
// and outlier detection's ejection time readmit them.
func unprobed(targets []Target) []Target {
	for i := range targets {
		targets[i].Probe.Enabled = false
	}
	return targets
}

// TestSnapshotListsGroups: the groups are listed in configuration order
// of their first member, a backend without a group a group of its own,
// with their replicas, those in service, and their budget; a pool where
// no backend was given a group lists none.
func TestSnapshotListsGroups(t *testing.T) {
	s := Settings{Readiness: config.Readiness{PerGroup: maxUnavailableOne}}
	p := newPool(t, groupedTargets("s1", "s2", "s1", "", "s2"), s)
	enter(p, entries.Entry{Backend: "b2", Reason: "disk"}, entries.Entry{Backend: "b4", Reason: "disk"})
	feed(p.Backends()[1], downResult, defaultProbe.Failures)
	got := p.Snapshot().Groups
	want := []budget.Group{
		{Name: "s1", Budget: budget.Budget{Expected: 2, CurrentHealthy: 1, DesiredHealthy: 1}, Budgeted: true},
		{Name: "s2", Budget: budget.Budget{Expected: 2, CurrentHealthy: 0, DesiredHealthy: 1}, Budgeted: true},
		{Name: "b3", Budget: budget.Budget{Expected: 1, CurrentHealthy: 1, DisruptionsAllowed: 1}},
	}
	if len(got) != len(want) {
		t.Fatalf("groups %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("group %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if got[0].Holds() != true || got[1].Holds() != false || got[2].Holds() != true {
		t.Errorf("holds: %v %v %v, want s1 and b3 holding, s2 below its budget", got[0].Holds(), got[1].Holds(), got[2].Holds())
	}
	if budgets := p.GroupBudgets(); len(budgets) != 3 || budgets[1] != want[1] {
		t.Errorf("GroupBudgets %+v, want the snapshot's", budgets)
	}
	if b := p.Backends()[3].Snapshot(); b.Group != "b3" || b.Grouped {
		t.Errorf("b3's snapshot: group %q grouped %v, want its own name and not grouped", b.Group, b.Grouped)
	}
	if b := p.Backends()[0].Snapshot(); b.Group != "s1" || !b.Grouped {
		t.Errorf("b0's snapshot: group %q grouped %v, want s1", b.Group, b.Grouped)
	}

	plain := newPool(t, numberedTargets(3), s)
	if got := plain.Snapshot().Groups; got != nil {
		t.Errorf("a pool without groups lists %+v", got)
	}
	if got := newPool(t, groupedTargets("s1", "s1"), Settings{}).GroupBudgets(); got != nil {
		t.Errorf("GroupBudgets without readiness.per_group: %+v, want nil", got)
	}
}

// TestReloadMovesABackendToAnotherGroup: a reload that changes only a
// backend's group keeps its state, and the backend is in its new group.
func TestReloadMovesABackendToAnotherGroup(t *testing.T) {
	p := newPool(t, groupedTargets("s1", "s1"), Settings{})
	feed(p.Backends()[1], okResult, defaultProbe.Successes)
	if err := p.Apply(groupedTargets("s1", "s2"), Settings{}); err != nil {
		t.Fatal(err)
	}
	b1 := p.Backends()[1]
	if b1.Group() != "s2" || b1.Health().State != health.StateHealthy {
		t.Errorf("b1 after the reload: group %q, state %s; want s2, still healthy", b1.Group(), b1.Health().State)
	}
}

// TestPassiveEjectionKeepsTheGroupBudget: passive health ejects one
// replica of a group of two under per_group.max_unavailable 1, and
// suppresses the second, counted and logged naming the group, although
// the pool's budget allows it; another group's replica is still ejected.
func TestPassiveEjectionKeepsTheGroupBudget(t *testing.T) {
	var logs bytes.Buffer
	s := passiveSettings()
	s.Passive.MaxEjectedPercent = 100
	s.Readiness.PerGroup = maxUnavailableOne
	p, _ := newClockedPool(t, log.NewLogfmtLogger(&logs), unprobed(groupedTargets("s1", "s1", "s2", "s2")), s)
	bs := p.Backends()
	failTraffic(p, bs[0], 3)
	failTraffic(p, bs[1], 3)
	failTraffic(p, bs[2], 3)
	if got := selectedNames(p); got != "[b1 b3]" {
		t.Errorf("selected %s, want b1 kept for its group, b0 and b2 ejected", got)
	}
	if got := p.Snapshot().PassiveSuppressed; got != 1 {
		t.Errorf("%d suppressed passive ejections, want 1", got)
	}
	if !strings.Contains(logs.String(), `msg="Passive health did not eject the backend: the budget of its replica group allows no disruption" backend=b1`) ||
		!strings.Contains(logs.String(), "group=s1 group_in_service=1 group_desired_healthy=1") {
		t.Errorf("no suppression log naming the group:\n%s", logs.String())
	}
}

// TestOutlierEjectionKeepsTheGroupBudget: two replicas of one group
// failing in the same rounds are both outliers; the first is ejected and
// the second suppressed by the group's budget, counted as the pool's
// floor counts, while the pool's budget would allow both.
func TestOutlierEjectionKeepsTheGroupBudget(t *testing.T) {
	for _, perGroup := range []bool{false, true} {
		p, clock, logs := detectingPool(t, 5, true, nil, false)
		s := Settings{Outlier: p.settings.Outlier}
		if perGroup {
			s.Readiness.PerGroup = maxUnavailableOne
		}
		if err := p.Apply(unprobed(groupedTargets("s1", "s1", "s2", "s2", "s3")), s); err != nil {
			t.Fatal(err)
		}
		rounds(p, clock, 5, map[int]bool{0: true, 1: true}, nil)
		ejected := 0
		for _, b := range p.Backends()[:2] {
			if b.Served().State() == health.ServedEjected {
				ejected++
			}
		}
		suppressed := p.Snapshot().Suppressed[outlier.ReasonFailure]
		switch {
		case perGroup && (ejected != 1 || suppressed != 1):
			t.Errorf("per_group: %d of s1 ejected, %d suppressed; want 1 and 1", ejected, suppressed)
		case perGroup && !strings.Contains(logs.String(), "the budget of its replica group allows no disruption"):
			t.Errorf("no suppression log naming the group:\n%s", logs)
		case !perGroup && (ejected != 2 || suppressed != 0):
			t.Errorf("without per_group: %d of s1 ejected, %d suppressed; want both ejected", ejected, suppressed)
		}
	}
}

// TestAdmissionJudgesTheGroup: a maintenance request is judged by its
// backend's group too, every stored entry counted: with one replica of
// s1 in maintenance the other cannot go, while a replica of s2 can.
func TestAdmissionJudgesTheGroup(t *testing.T) {
	p := newPool(t, groupedTargets("s1", "s1", "s2", "s2"), Settings{Readiness: config.Readiness{PerGroup: maxUnavailableOne}})
	// Admission counts only backends with a verdict.
	for _, b := range p.Backends() {
		feed(b, health.StatusResult(200), 1)
	}
	stored := []entries.Entry{{Backend: "b0", Reason: "disk"}}
	a, release, err := p.AdmitMaintenance(stored, "b1")
	if err != nil {
		t.Fatal(err)
	}
	release()
	want := budget.Group{Name: "s1", Budget: budget.Budget{Expected: 2, CurrentHealthy: 1, DesiredHealthy: 1}, Budgeted: true}
	if !a.InService || a.Group != want || a.Group.AllowsDisruption() || !a.Budget.AllowsDisruption() {
		t.Errorf("admission of b1: %+v; want it in service, the pool allowing it and its group %+v not", a, want)
	}
	a, release, _ = p.AdmitMaintenance(stored, "b2")
	release()
	if a.Group.Name != "s2" || !a.Group.AllowsDisruption() {
		t.Errorf("admission of b2: %+v; want s2 allowing one disruption", a)
	}
}
