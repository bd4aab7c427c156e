package store

import (
	"errors"
	"time"

	"github.com/probegate/probegate/collector/entries"
)

// keeperOf is a shared store's word on an entry, given the lease keys
// read (live, by backend): an entry bound to a lease is held while its
// lease key exists under that very lease, and ended otherwise; one
// without a lease is held when it has no ttl (there is nothing to
// measure), and ended when it has an Until that no lease measures
// (written by hand, or by a probegate that measured ttls on its own
// clock), since no replica's clock may end it.
func keeperOf(e leasedEntry, live map[string]int64) entries.Keeper {
	switch {
	case e.Lease != 0 && live[e.Backend] == e.Lease:
		return entries.KeptByStore
	case e.Lease == 0 && e.Until.IsZero():
		return entries.KeptByStore
	}
	return entries.EndedByStore
}

// inForceBy keeps the entries in force by the lease keys read (live), by
// entries' rule with keeperOf's word, and returns them with the leases
// they are bound to. It reads no clock: a shared store measures every
// ttl.
func inForceBy(all []leasedEntry, live map[string]int64) ([]entries.Entry, map[string]int64) {
	var out []entries.Entry
	leases := map[string]int64{}
	for _, e := range all {
		if !e.InForce(time.Time{}, keeperOf(e, live)) {
			continue
		}
		out = append(out, e.Entry)
		if e.Lease != 0 {
			leases[e.Backend] = e.Lease
		}
	}
	return out, leases
}

// EndedByLeases applies to held, the state in force, the removals that a
// read of a shared store decided although its entries document could not
// be decoded: read and err are what a Load or a Watch answered. Removals
// are the lease keys' alone, so they still apply: an entry of held bound
// to a lease whose key is gone (or is under another lease) has ended,
// and leaves. Additions wait for a document that decodes, and nothing
// else of held changes: its token stays, so that every write is still
// refused until the document is repaired. It returns the state that
// remains, at the read's revision, and whether an entry ended; held and
// false when err is not a corrupt document's, the read is not newer than
// held, or nothing ended.
func EndedByLeases(held, read State, err error) (State, bool) {
	var corrupt *CorruptError
	if !errors.As(err, &corrupt) || read.leases == nil || read.Revision <= held.Revision {
		return held, false
	}
	kept := State{Revision: read.Revision, Token: held.Token}
	kept.Entries, kept.leases = inForceBy(withLeases(held.Entries, held.leases), read.leases)
	if len(kept.Entries) == len(held.Entries) {
		return held, false
	}
	return kept, true
}
