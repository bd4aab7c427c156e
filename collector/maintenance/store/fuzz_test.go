package store

import (
	"testing"

	"github.com/probegate/probegate/collector/entries"
)

// sameEntries reports whether two lists of entries are the same, times
// compared as instants (a decoded time's location is a new value each
// time).
func sameEntries(a, b []entries.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Backend != y.Backend || x.Reason != y.Reason || x.By != y.By || !x.Since.Equal(y.Since) || !x.Until.Equal(y.Until) {
			return false
		}
	}
	return true
}

// FuzzStoreReader: the reader of both stores never panics on any input,
// and whatever it accepts is saved as a state it reads back the same: an
// entry that can be read can always be written again.
func FuzzStoreReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := decodeState(data)
		if err != nil {
			return
		}
		again, err := encodeState(entries)
		if err != nil {
			t.Fatalf("accepted %q but cannot save it again: %v", data, err)
		}
		back, err := decodeState(again)
		if err != nil {
			t.Fatalf("accepted %q but cannot read its saved form %q: %v", data, again, err)
		}
		if !sameEntries(entries, back) {
			t.Fatalf("read %+v from %q, %+v from its saved form", entries, data, back)
		}
	})
}
