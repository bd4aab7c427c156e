package status

import (
	"fmt"
	"testing"

	"github.com/probegate/probegate/collector/budget"
)

// TestGroupsViewShowsAttentionFirstAndBounded: the groups needing a
// person (below their budget, or none in service) come first, each part
// in configuration order, and at most maxGroupRows are shown.
func TestGroupsViewShowsAttentionFirstAndBounded(t *testing.T) {
	var groups []budget.Group
	for i := range 150 {
		in := 2
		if i%10 == 9 {
			in = 0
		}
		groups = append(groups, budget.Group{Name: fmt.Sprintf("g%d", i), Budget: budget.Budget{Expected: 2, CurrentHealthy: in}})
	}
	v := newGroupsView(groups)
	if v.Total != 150 || v.More != 50 || len(v.Rows) != maxGroupRows {
		t.Fatalf("view of %d rows, total %d, more %d; want %d, 150, 50", len(v.Rows), v.Total, v.More, maxGroupRows)
	}
	for i, want := range []string{"g9", "g19", "g29"} {
		if v.Rows[i].Name != want || !v.Rows[i].Attention {
			t.Errorf("row %d is %+v, want %s needing attention", i, v.Rows[i], want)
		}
	}
	if r := v.Rows[15]; r.Name != "g0" || r.Attention {
		t.Errorf("row 15 is %+v, want g0, the first of those holding", r)
	}
	if v := newGroupsView(nil); len(v.Rows) != 0 || v.Total != 0 {
		t.Errorf("no groups: %+v", v)
	}
}
