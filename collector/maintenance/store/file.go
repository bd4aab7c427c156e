package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/config"
)

// fileName is the name of the state file in the storage directory.
const fileName = "maintenance.json"

// tempPrefix starts the names of the temporary files a save writes before
// renaming one over the state file.
const tempPrefix = "." + fileName + ".tmp-"

// FileStore keeps the entries of a single replica in one JSON file,
// replaced atomically on every save: a crash leaves the old file or the
// new one, never a torn one. Its revision counts the saves of this
// process, which is the only writer.
type FileStore struct {
	dir, path string

	// unlock releases the directory's lock, when the store holds it.
	unlock func()

	mu      sync.Mutex
	rev     int64
	entries []entries.Entry
}

// OpenFile reads the state file in the storage directory, without taking
// its lock: the caller holds it (LockDir). A missing file (or directory)
// holds no entries, and the directory is created by the first save; a
// file that is not a regular file, is larger than 64 MiB, or cannot be
// read or parsed is an error naming it, and nothing is written.
func OpenFile(dir string) (*FileStore, error) {
	s := &FileStore{dir: dir, path: filepath.Join(dir, fileName), rev: 1}
	entries, err := readStateFile(s.path)
	if err != nil {
		return nil, err
	}
	s.entries = entries
	s.removeTemporaries()
	return s, nil
}

// openLockedFile opens the file store of a running probegate: it takes
// the directory's lock when the directory exists or create is set, and
// holds it until Close.
func openLockedFile(dir string, create bool) (*FileStore, error) {
	unlock := func() {}
	if _, err := os.Stat(dir); create || err == nil {
		if unlock, err = LockDir(dir); err != nil {
			return nil, err
		}
	}
	s, err := OpenFile(dir)
	if err != nil {
		unlock()
		return nil, err
	}
	s.unlock = unlock
	return s, nil
}

// readStateFile reads a state file, guarded as every kept file is.
func readStateFile(path string) ([]entries.Entry, error) {
	data, found, err := readKeptFile(path, "maintenance state")
	if !found || err != nil {
		return nil, err
	}
	entries, err := decodeState(data)
	if err != nil {
		return nil, fmt.Errorf("maintenance state %s is corrupt (fix or remove it): %w", path, err)
	}
	return entries, nil
}

// Kind is "file".
func (s *FileStore) Kind() string { return config.StoreFile }

// Shared is false: one replica owns the file.
func (s *FileStore) Shared() bool { return false }

// Load returns the entries as last saved.
func (s *FileStore) Load(context.Context) (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return State{Entries: s.entries, Revision: s.rev, Token: s.rev}, nil
}

// Swap saves the entries when base is at the last revision, and keeps
// the old state when the save fails. The ttl is not the file's to
// measure: one process owns the file, and its clock ends the entries
// at their Until.
func (s *FileStore) Swap(_ context.Context, base State, w Write) (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if base.Token != s.rev {
		return State{}, ErrConflict
	}
	if err := s.save(w.Entries); err != nil {
		return State{}, err
	}
	s.rev++
	s.entries = w.Entries
	return State{Entries: w.Entries, Revision: s.rev, Token: s.rev}, nil
}

// Watch returns at once: nobody else writes the file.
func (s *FileStore) Watch(context.Context, func(State, error)) {}

// Close releases the directory's lock when the store holds it; every save
// is complete when Swap returns.
func (s *FileStore) Close() error {
	if s.unlock != nil {
		s.unlock()
	}
	return nil
}

// removeTemporaries removes what a save interrupted by a crash left behind.
func (s *FileStore) removeTemporaries() {
	names, err := os.ReadDir(s.dir) // None when the directory is missing.
	if err != nil {
		return
	}
	for _, e := range names {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			os.Remove(filepath.Join(s.dir, e.Name()))
		}
	}
}

// save replaces the state file with the entries.
func (s *FileStore) save(entries []entries.Entry) error {
	data, err := encodeState(entries)
	if err != nil {
		return err
	}
	return writeAtomically(s.dir, s.path, data)
}

// writeAtomically replaces the file at path in dir with data: it writes a
// temporary file in the same directory, syncs it, renames it over the
// file and syncs the directory, so that the rename itself is durable. A
// crash leaves the old file or the new one, never a torn one.
func writeAtomically(dir, path string, data []byte) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create storage directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	done = true
	return syncDir(dir)
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
