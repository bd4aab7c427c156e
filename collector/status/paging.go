package status

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/probegate/probegate/collector/fanout"
	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
)

// A page with a row per backend grows with the pool: at 10,000 backends
// it was 31 MB, rebuilt on every refresh. /status shows pageSize backends
// a page instead, the backends that need a person first (out of service,
// ejected, in maintenance, probe unsupported), and sums the whole pool up
// by state, so that the first page answers "what is wrong" at any size.

// pageSize is how many backends one page shows. A row with its history
// strip takes about 3 KiB, so a page stays far below 1 MB.
const pageSize = 100

// pagerView is the page's place among the pages, and the whole pool by
// state.
type pagerView struct {
	Page, Pages int
	// First and Last number the backends shown, from 1, in page order.
	First, Last int
	Total       int
	// Problems is how many backends need a person; they come first.
	Problems int
	States   []stateCount
	// Prev and Next are the links to the neighbouring pages, "" at an end.
	Prev, Next string
}

type stateCount struct {
	State string
	Count int
}

// problem reports whether a backend belongs on the first pages.
func problem(b *pool.BackendSnapshot) bool {
	return !b.Served.InService() || b.Outlier.Ejected || b.Maintenance != nil || b.Served.State() == health.ServedProbeUnsupported
}

// pageOrder is the order backends are shown in: the problems first, each
// group in configuration order. problems counts the first group.
func pageOrder(backends []pool.BackendSnapshot) (order []int, problems int) {
	order = make([]int, 0, len(backends))
	for i := range backends {
		if problem(&backends[i]) {
			order = append(order, i)
		}
	}
	problems = len(order)
	for i := range backends {
		if !problem(&backends[i]) {
			order = append(order, i)
		}
	}
	return order, problems
}

// parsePage reads ?page: a page number from 1; a page past the last shows
// the last.
func parsePage(s string) (int, error) {
	if s == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, &pageError{s}
	}
	return n, nil
}

type pageError struct{ value string }

func (e *pageError) Error() string {
	return "page=" + strconv.Quote(e.value) + ": want a page number from 1"
}

// paginate picks the backends of page (from 1) in page order, and says
// where the page is; query is the page's other parameters, kept in its
// links.
func paginate(backends []pool.BackendSnapshot, page int, query string) (shown []int, p pagerView) {
	order, problems := pageOrder(backends)
	p = pagerView{Total: len(backends), Problems: problems, Pages: max(1, (len(order)+pageSize-1)/pageSize)}
	p.Page = min(page, p.Pages)
	from := (p.Page - 1) * pageSize
	shown = order[from:min(from+pageSize, len(order))]
	p.First, p.Last = from+1, from+len(shown)
	if p.Page > 1 {
		p.Prev = "?page=" + strconv.Itoa(p.Page-1) + query
	}
	if p.Page < p.Pages {
		p.Next = "?page=" + strconv.Itoa(p.Page+1) + query
	}
	counts := map[string]int{}
	for i := range backends {
		counts[backends[i].Served.State().String()]++
	}
	for _, s := range health.ServedStates() {
		if n := counts[s.String()]; n > 0 {
			p.States = append(p.States, stateCount{State: s.String(), Count: n})
		}
	}
	return shown, p
}

// roundRows are the last round's backends that did not contribute, then
// those that did, at most pageSize of them; more is how many are left
// out.
func roundRows(backends []fanout.RoundBackend) (rows []fanout.RoundBackend, more int) {
	rows = slices.Clone(backends)
	slices.SortStableFunc(rows, func(a, b fanout.RoundBackend) int {
		return cmp.Compare(btoi(a.Outcome == fanout.OutcomeContributed), btoi(b.Outcome == fanout.OutcomeContributed))
	})
	if len(rows) > pageSize {
		return rows[:pageSize], len(rows) - pageSize
	}
	return rows, 0
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
