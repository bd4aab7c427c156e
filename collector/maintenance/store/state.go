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

// document is the stored form of the entries, in the file and in etcd.
type document struct {
	Maintenance []entries.Entry `json:"maintenance"`
}

// decodeState parses a stored state: one JSON object
// {"maintenance": [entry, ...]}, no unknown field, nothing after it, at
// most 64 MiB, every entry naming a distinct backend. It is the reader of
// both stores.
func decodeState(data []byte) ([]entries.Entry, error) {
	if len(data) > maxStoredBytes {
		return nil, fmt.Errorf("%d bytes, more than %d", len(data), maxStoredBytes)
	}
	var d document
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return d.Maintenance, checkEntries(d.Maintenance)
}

// checkEntries requires every entry to name a distinct backend.
func checkEntries(in []entries.Entry) error {
	seen := make(map[string]bool, len(in))
	for i, m := range in {
		switch {
		case m.Backend == "":
			return fmt.Errorf("entry %d has no backend", i+1)
		case seen[m.Backend]:
			return fmt.Errorf("backend %q appears twice", m.Backend)
		}
		seen[m.Backend] = true
	}
	return nil
}

// encodeState is the stored form of entries.
func encodeState(in []entries.Entry) ([]byte, error) {
	if in == nil {
		in = []entries.Entry{}
	}
	data, err := json.MarshalIndent(document{Maintenance: in}, "", "  ")
	return append(data, '\n'), err
}
