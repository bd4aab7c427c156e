// Package maintenance serves the admin API that takes backends out of
// service for maintenance under the readiness budget, and keeps the
// maintenance entries on disk so that they survive restarts. The rules of
// maintenance itself are the pool's (collector/pool, maintenance.go).
package maintenance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/probegate/probegate/collector/pool"
)

// FileName is the name of the state file in the storage directory.
const FileName = "maintenance.json"

// tempPrefix starts the names of the temporary files a save writes before
// renaming one over the state file.
const tempPrefix = "." + FileName + ".tmp-"

// Store keeps the maintenance entries in one JSON file, replaced atomically
// on every save: a crash leaves the old file or the new one, never a torn
// one.
type Store struct {
	dir  string
	path string
}

// file is the state file's format.
type file struct {
	Maintenance []pool.Maintenance `json:"maintenance"`
}

// Open creates the storage directory when it is missing and reads the
// state file in it. A missing file holds no entries; a file that cannot be
// read or parsed is an error naming it, and nothing is written.
func Open(dir string) (*Store, []pool.Maintenance, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, nil, fmt.Errorf("create storage directory: %w", err)
	}
	s := &Store{dir: dir, path: filepath.Join(dir, FileName)}
	entries, err := s.read()
	if err != nil {
		return nil, nil, err
	}
	s.removeTemporaries()
	return s, entries, nil
}

// Path is the state file's path.
func (s *Store) Path() string { return s.path }

func (s *Store) read() ([]pool.Maintenance, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read maintenance state %s: %w", s.path, err)
	}
	var f file
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("maintenance state %s is corrupt (fix or remove it): %w", s.path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("maintenance state %s is corrupt (fix or remove it): data after the JSON object", s.path)
	}
	seen := make(map[string]bool, len(f.Maintenance))
	for i, m := range f.Maintenance {
		switch {
		case m.Backend == "":
			return nil, fmt.Errorf("maintenance state %s is corrupt (fix or remove it): entry %d has no backend", s.path, i+1)
		case seen[m.Backend]:
			return nil, fmt.Errorf("maintenance state %s is corrupt (fix or remove it): backend %q appears twice", s.path, m.Backend)
		}
		seen[m.Backend] = true
	}
	return f.Maintenance, nil
}

// removeTemporaries removes what a save interrupted by a crash left behind.
func (s *Store) removeTemporaries() {
	names, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range names {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			os.Remove(filepath.Join(s.dir, e.Name()))
		}
	}
}

// Save replaces the state file with the entries: it writes a temporary
// file in the same directory, syncs it, renames it over the state file and
// syncs the directory, so that the rename itself is durable.
func (s *Store) Save(entries []pool.Maintenance) error {
	if entries == nil {
		entries = []pool.Maintenance{}
	}
	data, err := json.MarshalIndent(file{Maintenance: entries}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("save maintenance state: %w", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("save maintenance state: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("save maintenance state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save maintenance state: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("save maintenance state: %w", err)
	}
	done = true
	return syncDir(s.dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
