package fleet

import (
	"slices"

	"github.com/cespare/xxhash/v2"
)

// Members is the set of live replicas that backends are assigned over: the
// names of the replicas with a live view, prepared once per change of the
// views so that assigning a backend allocates nothing. Every replica that
// holds the same names computes the same assignment, whatever their order.
//
// A backend's vantage points are the members ranked highest by a weight
// of the pair (backend name, replica name): rendezvous, or highest random
// weight, hashing. A member leaving takes only the backends it ranked
// high for, each of which gains the next member of its ranking; a member
// joining takes only the backends for which it outranks one of their
// vantage points. The weight is xxhash64 of each name, mixed, which is
// the same on every architecture and in every process: an assignment must
// never depend on a per-process seed, and changing the weight is changing
// every replica's share in a rolling upgrade (a test pins it).
//
// A Members is read-only once made and safe for concurrent use.
type Members struct {
	// names are the distinct non-empty names, sorted, so that a tie of
	// weights is broken by name, the same way everywhere.
	names []string
	// hashes are the names' xxhash64, index for index.
	hashes []uint64
}

// NewMembers prepares the live replicas named. Duplicates count once and
// an empty name not at all (no view has one).
func NewMembers(replicas []string) Members {
	names := slices.Clone(replicas)
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > 0 && names[0] == "" {
		names = names[1:]
	}
	hashes := make([]uint64, len(names))
	for i, name := range names {
		hashes[i] = xxhash.Sum64String(name)
	}
	return Members{names: names, hashes: hashes}
}

// Len is the number of members.
func (m Members) Len() int { return len(m.names) }

// Has reports whether replica is a member.
func (m Members) Has(replica string) bool {
	_, found := slices.BinarySearch(m.names, replica)
	return found
}

// VantagePoints is how many vantage points a backend gets when k are
// wanted: k capped by the members, and at least one while there is one.
func (m Members) VantagePoints(k int) int {
	return min(max(k, 1), len(m.names))
}

// Assign appends to dst the vantage points of backend, highest ranked
// first: VantagePoints(k) members. It allocates only when dst is too
// small.
func (m Members) Assign(dst []string, backend string, k int) []string {
	backendHash := xxhash.Sum64String(backend)
	previous, previousWeight := -1, uint64(0)
	for range m.VantagePoints(k) {
		best, bestWeight := -1, uint64(0)
		for i, replicaHash := range m.hashes {
			w := weight(backendHash, replicaHash)
			if previous >= 0 && !outranks(previousWeight, previous, w, i) {
				continue
			}
			if best < 0 || outranks(w, i, bestWeight, best) {
				best, bestWeight = i, w
			}
		}
		dst = append(dst, m.names[best])
		previous, previousWeight = best, bestWeight
	}
	return dst
}

// outranks reports whether member i of weight wi ranks before member j of
// weight wj: the heavier first, and of equal weights the first by name.
func outranks(wi uint64, i int, wj uint64, j int) bool {
	return wi > wj || (wi == wj && i < j)
}

// weight is the rendezvous weight of a backend and a replica, from their
// names' hashes. The replica hashes are computed once per Members and the
// backend's once per call, so a weight is a mix of the two: the XOR of two
// hashes is no good ranking by itself (the backends whose hashes share
// the high bits would rank the replicas alike), and the finalizer of
// splitmix64 spreads every input bit over the whole weight.
func weight(backendHash, replicaHash uint64) uint64 {
	x := backendHash ^ replicaHash
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
