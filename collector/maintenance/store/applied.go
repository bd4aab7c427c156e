package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/probegate/probegate/config"
)

// appliedFileName is the file, in the storage directory, of the last state
// a replica applied from a shared store.
const appliedFileName = "maintenance-applied.json"

// Applied keeps the last state a replica applied from a shared store, so
// that a replica that starts while the store cannot be reached serves the
// entries that were in force rather than none: the conservative
// direction, since an entry in force takes a backend out. It is this
// replica's own copy, never a source for others.
//
// The file names the store its state came from (SourceOf), and a state
// from another is never served: two pools sharing a storage directory, or
// a prefix changed across a restart, would otherwise serve another pool's
// entries.
type Applied struct {
	dir, path, source string
}

// NewApplied keeps the applied state of the store named source (see
// SourceOf) in dir.
func NewApplied(dir, source string) *Applied {
	return &Applied{dir: dir, path: filepath.Join(dir, appliedFileName), source: source}
}

// SourceOf names the store of cfg for the applied state: its kind and, for
// etcd, its key prefix. The endpoints are left out: the same cluster may
// be reached at other addresses after a restart.
func SourceOf(cfg config.Maintenance) string {
	if cfg.Store == config.StoreEtcd {
		return cfg.Store + " " + cfg.Etcd.Prefix
	}
	return cfg.Store
}

// Path is the file the state is kept in.
func (a *Applied) Path() string { return a.path }

// appliedDocument is the stored form of an applied state.
type appliedDocument struct {
	// Store is the SourceOf the store the state came from.
	Store    string `json:"store"`
	Revision int64  `json:"revision"`
	Token    int64  `json:"token"`
	// Maintenance are the entries with the leases they are bound to, in
	// the form a shared store keeps them.
	Maintenance []leasedEntry `json:"maintenance"`
}

// Write replaces the kept state with st, atomically.
func (a *Applied) Write(st State) error {
	data, err := json.MarshalIndent(appliedDocument{Store: a.source, Revision: st.Revision, Token: st.Token,
		Maintenance: withLeases(st.Entries, st.leases)}, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomically(a.dir, a.path, append(data, '\n'))
}

// Read returns the kept state, and false when there is none. It is read
// at start, when the store may be away, guarded as the file store's state
// is (readKeptFile). A file that is not a regular one, is too large,
// cannot be read or parsed, or holds another store's state, is an error
// naming it.
func (a *Applied) Read() (State, bool, error) {
	data, found, err := readKeptFile(a.path, "applied maintenance state")
	if !found || err != nil {
		return State{}, false, err
	}
	var d appliedDocument
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return State{}, false, fmt.Errorf("%s is corrupt: %w", a.path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return State{}, false, fmt.Errorf("%s is corrupt: data after the JSON object", a.path)
	}
	if d.Store != a.source {
		return State{}, false, fmt.Errorf("%s holds the state of the store %q, not of %q (another pool's, or the prefix changed): ignored", a.path, d.Store, a.source)
	}
	if err := checkEntries(d.Maintenance, leasedBackendOf); err != nil {
		return State{}, false, fmt.Errorf("%s is corrupt: %w", a.path, err)
	}
	st := State{Revision: d.Revision, Token: d.Token, leases: map[string]int64{}}
	for _, e := range d.Maintenance {
		st.Entries = append(st.Entries, e.Entry)
		if e.Lease != 0 {
			st.leases[e.Backend] = e.Lease
		}
	}
	return st, true, nil
}
