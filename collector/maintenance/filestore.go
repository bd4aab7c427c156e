package maintenance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/probegate/probegate/collector/pool"
)

// FileName is the name of the state file in the storage directory.
const FileName = "maintenance.json"

// maxStoredBytes bounds what is read of a stored state, a file or an etcd
// value: a real one holds a few hundred bytes per entry.
const maxStoredBytes = 64 << 20

// tempPrefix starts the names of the temporary files a save writes before
// renaming one over the state file.
const tempPrefix = "." + FileName + ".tmp-"

// FileStore keeps the entries of a single replica in one JSON file,
// replaced atomically on every save: a crash leaves the old file or the
// new one, never a torn one. Its revision counts the saves of this
// process, which is the only writer.
type FileStore struct {
	dir, path string

	mu      sync.Mutex
	rev     int64
	entries []pool.Maintenance
}

// OpenFile reads the state file in the storage directory. A missing file
// (or directory) holds no entries, and the directory is created by the
// first save; a file that is not a regular file, is larger than 64 MiB, or
// cannot be read or parsed is an error naming it, and nothing is written.
func OpenFile(dir string) (*FileStore, error) {
	s := &FileStore{dir: dir, path: filepath.Join(dir, FileName), rev: 1}
	entries, err := readStateFile(s.path)
	if err != nil {
		return nil, err
	}
	s.entries = entries
	s.removeTemporaries()
	return s, nil
}

// ReadFile reads the entries of the state file in dir without opening a
// store: for a listing that must not touch the directory.
func ReadFile(dir string) ([]pool.Maintenance, error) {
	return readStateFile(filepath.Join(dir, FileName))
}

// readStateFile reads a state file. It opens without blocking, so that a
// FIFO or a device put in its place is refused rather than waited on.
func readStateFile(path string) ([]pool.Maintenance, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read maintenance state %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read maintenance state %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("maintenance state %s is not a regular file (%s): remove it", path, info.Mode().Type())
	}
	if info.Size() > maxStoredBytes {
		return nil, fmt.Errorf("maintenance state %s is %d bytes, more than the %d a state file may hold: fix or remove it", path, info.Size(), maxStoredBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStoredBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read maintenance state %s: %w", path, err)
	}
	entries, err := DecodeState(data)
	if err != nil {
		return nil, fmt.Errorf("maintenance state %s is corrupt (fix or remove it): %w", path, err)
	}
	return entries, nil
}

// DecodeState parses a stored state: one JSON object
// {"maintenance": [entry, ...]}, no unknown field, nothing after it, at
// most 64 MiB, every entry naming a distinct backend. It is the reader of
// both stores.
func DecodeState(data []byte) ([]pool.Maintenance, error) {
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
	seen := make(map[string]bool, len(d.Maintenance))
	for i, m := range d.Maintenance {
		switch {
		case m.Backend == "":
			return nil, fmt.Errorf("entry %d has no backend", i+1)
		case seen[m.Backend]:
			return nil, fmt.Errorf("backend %q appears twice", m.Backend)
		}
		seen[m.Backend] = true
	}
	return d.Maintenance, nil
}

// encodeState is the stored form of entries.
func encodeState(entries []pool.Maintenance) ([]byte, error) {
	if entries == nil {
		entries = []pool.Maintenance{}
	}
	data, err := json.MarshalIndent(document{Maintenance: entries}, "", "  ")
	return append(data, '\n'), err
}

// Kind is "file".
func (s *FileStore) Kind() string { return "file" }

// Shared is false: one replica owns the file.
func (s *FileStore) Shared() bool { return false }

// Load returns the entries as last saved.
func (s *FileStore) Load(context.Context) (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return State{Entries: s.entries, Revision: s.rev}, nil
}

// Swap saves entries when rev is the last revision, and keeps the old
// state when the save fails.
func (s *FileStore) Swap(_ context.Context, rev int64, entries []pool.Maintenance) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev != s.rev {
		return s.rev, ErrConflict
	}
	if err := s.save(entries); err != nil {
		return s.rev, err
	}
	s.rev++
	s.entries = entries
	return s.rev, nil
}

// Watch returns at once: nobody else writes the file.
func (s *FileStore) Watch(context.Context, func(State)) {}

// Close does nothing: every save is complete when Swap returns.
func (s *FileStore) Close() error { return nil }

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

// save replaces the state file with the entries: it writes a temporary
// file in the same directory, syncs it, renames it over the state file and
// syncs the directory, so that the rename itself is durable.
func (s *FileStore) save(entries []pool.Maintenance) error {
	data, err := encodeState(entries)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o750); err != nil {
		return fmt.Errorf("create storage directory: %w", err)
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
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("save maintenance state %s: %w", s.path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("save maintenance state %s: %w", s.path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save maintenance state %s: %w", s.path, err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("save maintenance state %s: %w", s.path, err)
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
