package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/probegate/probegate/collector/entries"
)

// maxStoredBytes bounds what is read of a stored state, a file or an etcd
// value: a real one holds a few hundred bytes per entry.
const maxStoredBytes = 64 << 20

// document is the stored form of the entries of a store, in a file or in
// etcd: the file store keeps entries.Entry, a shared store leasedEntry.
type document[E any] struct {
	Maintenance []E `json:"maintenance"`
}

// leasedEntry is an entry as a shared store keeps it: the entry, and the
// id of the lease that measures its ttl (etcd), 0 when it has none. The
// lease is the store's bookkeeping, not part of the entry: an entry with
// a lease ends when its store says so, never by a replica's clock.
type leasedEntry struct {
	entries.Entry
	Lease int64 `json:"lease,omitempty"`
}

func backendOf(e entries.Entry) string     { return e.Backend }
func leasedBackendOf(e leasedEntry) string { return e.Backend }

// decodeState parses the file store's stored state (decodeDocument).
func decodeState(data []byte) ([]entries.Entry, error) {
	return decodeDocument(data, backendOf)
}

// decodeDocument parses a stored state: one JSON object
// {"maintenance": [entry, ...]}, no unknown field, nothing after it, at
// most 64 MiB, every entry naming a distinct backend (backend reads an
// entry's). It is the reader of every store.
func decodeDocument[E any](data []byte, backend func(E) string) ([]E, error) {
	if len(data) > maxStoredBytes {
		return nil, fmt.Errorf("%d bytes, more than %d", len(data), maxStoredBytes)
	}
	var d document[E]
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return d.Maintenance, checkEntries(d.Maintenance, backend)
}

// checkEntries requires every entry to name a distinct backend.
func checkEntries[E any](in []E, backend func(E) string) error {
	seen := make(map[string]bool, len(in))
	for i, m := range in {
		switch name := backend(m); {
		case name == "":
			return fmt.Errorf("entry %d has no backend", i+1)
		case seen[name]:
			return fmt.Errorf("backend %q appears twice", name)
		default:
			seen[name] = true
		}
	}
	return nil
}

// encodeState is the file store's stored form of entries.
func encodeState(in []entries.Entry) ([]byte, error) { return encodeDocument(in) }

// encodeDocument is the stored form of entries.
func encodeDocument[E any](in []E) ([]byte, error) {
	if in == nil {
		in = []E{}
	}
	data, err := json.MarshalIndent(document[E]{Maintenance: in}, "", "  ")
	return append(data, '\n'), err
}

// withLeases pairs each entry with the lease leases binds it to.
func withLeases(in []entries.Entry, leases map[string]int64) []leasedEntry {
	out := make([]leasedEntry, len(in))
	for i, e := range in {
		out[i] = leasedEntry{Entry: e, Lease: leases[e.Backend]}
	}
	return out
}
