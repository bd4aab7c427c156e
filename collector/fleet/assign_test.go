package fleet

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// names is n names made from format, for backends and replicas.
func names(format string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

// TestAssignPinned pins the assignment of a few backends: every replica of
// a fleet must compute the same one, including replicas of the previous
// and the next version during a rolling upgrade, so a change to the
// weight or the tie-break must fail here first.
func TestAssignPinned(t *testing.T) {
	m := NewMembers([]string{"probegate-0", "probegate-1", "probegate-2", "probegate-3", "probegate-4"})
	for _, c := range []struct {
		backend string
		want    []string
	}{
		{"s1-a", []string{"probegate-2", "probegate-3", "probegate-4"}},
		{"s1-b", []string{"probegate-3", "probegate-0", "probegate-4"}},
		{"prometheus-shard-0042", []string{"probegate-4", "probegate-2", "probegate-3"}},
		{"", []string{"probegate-0", "probegate-2", "probegate-1"}},
	} {
		if got := m.Assign(nil, c.backend, 3); !slices.Equal(got, c.want) {
			t.Errorf("Assign(%q, 3) = %q; want %q", c.backend, got, c.want)
		}
	}
}

// TestAssignIsTheRanking checks Assign's selection against the plain
// definition: every member sorted by weight, heaviest first, ties by name.
func TestAssignIsTheRanking(t *testing.T) {
	replicas := names("replica-%d", 9)
	m := NewMembers(replicas)
	for _, backend := range names("backend-%d", 300) {
		ranked := slices.Clone(replicas)
		h := xxhash.Sum64String(backend)
		slices.SortFunc(ranked, func(a, b string) int {
			if c := cmp.Compare(weight(h, xxhash.Sum64String(b)), weight(h, xxhash.Sum64String(a))); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		for k := 1; k <= len(replicas); k++ {
			if got := m.Assign(nil, backend, k); !slices.Equal(got, ranked[:k]) {
				t.Fatalf("%s: Assign(%d) = %q; the ranking begins %q", backend, k, got, ranked[:k])
			}
		}
	}
}

// TestTiesGoByName: of two members of equal weight the first by name
// ranks first, whichever order they were given in.
func TestTiesGoByName(t *testing.T) {
	m := Members{names: []string{"a", "b"}, hashes: []uint64{7, 7}}
	if got := m.Assign(nil, "x", 2); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("equal weights: %q; want a first", got)
	}
}

func TestAssignCapsAndOrders(t *testing.T) {
	for _, c := range []struct {
		name     string
		replicas []string
		k, want  int
	}{
		{"no replica", nil, 2, 0},
		{"fewer replicas than vantage points", []string{"a"}, 2, 1},
		{"as many", []string{"a", "b"}, 2, 2},
		{"more", []string{"a", "b", "c", "d", "e"}, 2, 2},
		{"zero vantage points asked: one", []string{"a", "b"}, 0, 1},
		{"negative: one", []string{"a", "b"}, -3, 1},
		{"duplicates and an empty name count once and not at all", []string{"b", "a", "", "b", "a"}, 5, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewMembers(c.replicas)
			got := m.Assign(nil, "backend", c.k)
			if len(got) != c.want {
				t.Fatalf("Assign = %q; want %d vantage points", got, c.want)
			}
			if m.VantagePoints(c.k) != c.want {
				t.Errorf("VantagePoints(%d) = %d; want %d", c.k, m.VantagePoints(c.k), c.want)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(got)))) != len(got) {
				t.Errorf("Assign = %q: a replica twice", got)
			}
			// The first vantage points of k+1 are those of k: a ranking.
			if more := m.Assign(nil, "backend", c.k+1); !slices.Equal(more[:len(got)], got) {
				t.Errorf("Assign(k+1) = %q does not begin with Assign(k) = %q", more, got)
			}
		})
	}
}

// TestAssignOrderIndependent: replicas that list the live names in
// different orders agree.
func TestAssignOrderIndependent(t *testing.T) {
	replicas := names("replica-%d", 7)
	reversed := slices.Clone(replicas)
	slices.Reverse(reversed)
	a, b := NewMembers(replicas), NewMembers(reversed)
	for _, backend := range names("backend-%d", 500) {
		if x, y := a.Assign(nil, backend, 3), b.Assign(nil, backend, 3); !slices.Equal(x, y) {
			t.Fatalf("%s: %q in one order, %q in the other", backend, x, y)
		}
	}
}

// TestSharesAreEven: every backend gets k distinct vantage points, and
// each replica's share, the backends whose vantage points include it, is
// about k/n of them.
func TestSharesAreEven(t *testing.T) {
	replicas := names("probegate-%d", 5)
	backends := names("backend-%d", 2000)
	m := NewMembers(replicas)
	shares := make(map[string]int)
	for _, backend := range backends {
		vantagePoints := m.Assign(nil, backend, 2)
		if len(vantagePoints) != 2 || vantagePoints[0] == vantagePoints[1] {
			t.Fatalf("%s: vantage points %q; want two distinct replicas", backend, vantagePoints)
		}
		for _, replica := range vantagePoints {
			shares[replica]++
		}
	}
	for _, replica := range replicas {
		// An even share is 2/5 of the backends, 800; rendezvous hashing
		// spreads them within a few standard deviations (about 22).
		if n := shares[replica]; n < 700 || n > 900 {
			t.Errorf("%s probes %d backends of %d; want about 800", replica, n, len(backends))
		}
	}
}

// TestMembershipMovesOnlyItsShare is the property rendezvous hashing is
// for: a replica leaving changes only the assignment of the backends it
// probed (each keeps its other vantage points, in their order, and gains
// the next), and a replica joining changes only the backends it now
// probes (each loses its last vantage point to it). Both are one check,
// read either way.
func TestMembershipMovesOnlyItsShare(t *testing.T) {
	backends := names("backend-%d", 3000)
	for _, k := range []int{1, 2, 3} {
		for n := 1; n <= 6; n++ {
			replicas := names("r%d", n)
			with := NewMembers(replicas)
			for gone := range replicas {
				without := NewMembers(slices.Delete(slices.Clone(replicas), gone, gone+1))
				if msg := moved(with, without, replicas[gone], backends, k); msg != "" {
					t.Fatalf("k=%d, %d replicas, %s leaving or joining: %s", k, n, replicas[gone], msg)
				}
			}
		}
	}
}

// moved says how the assignments of backends over members with and
// without, which differ by the replica changed alone, break the property
// of TestMembershipMovesOnlyItsShare, and is empty when they do not.
func moved(with, without Members, changed string, backends []string, k int) string {
	var x, y []string
	for _, backend := range backends {
		x, y = with.Assign(x[:0], backend, k), without.Assign(y[:0], backend, k)
		i := slices.Index(x, changed)
		if i < 0 {
			if !slices.Equal(x, y) {
				return fmt.Sprintf("%s: %q and %q, although %s is none of its vantage points", backend, x, y, changed)
			}
			continue
		}
		others := slices.Delete(slices.Clone(x), i, i+1)
		if len(y) < len(others) || len(y) > len(others)+1 || !slices.Equal(y[:len(others)], others) {
			return fmt.Sprintf("%s: %q and %q: more moved than %s", backend, x, y, changed)
		}
	}
	return ""
}
