package store

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/entries"
)

var sampleEntries = []entries.Entry{
	{Backend: "a", Reason: "disk swap", Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), By: "alice"},
	{Backend: "b", Reason: "kernel", Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Until: time.Date(2026, 1, 2, 5, 4, 5, 0, time.UTC), By: "127.0.0.1"},
}

func openFile(t *testing.T, dir string) *FileStore {
	t.Helper()
	s, err := OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// fileEntries reads what the state file in dir holds, without opening a
// store.
func fileEntries(dir string) ([]entries.Entry, error) {
	return readStateFile(filepath.Join(dir, fileName))
}

// swapAt saves entries on s at its current revision.
func swapAt(t *testing.T, s *FileStore, entries []entries.Entry) {
	t.Helper()
	st, _ := s.Load(t.Context())
	if _, err := s.Swap(t.Context(), st, Write{Entries: entries}); err != nil {
		t.Fatal(err)
	}
}

// TestStoreMissingFileIsEmpty: a storage directory that does not exist
// holds no entries, is not created by opening, and is created (0o750) by
// the first save.
func TestStoreMissingFileIsEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "sub")
	s := openFile(t, dir)
	if st, _ := s.Load(t.Context()); len(st.Entries) != 0 {
		t.Fatalf("entries %v, want none", st.Entries)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("opening created the directory: %v", err)
	}
	swapAt(t, s, sampleEntries)
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o750 {
		t.Errorf("storage dir: %v %v, want mode 0750", info, err)
	}
}

// TestStoreSaveRoundTrips: what a swap saved, a new store reads back, and
// the save leaves no temporary file behind.
func TestStoreSaveRoundTrips(t *testing.T) {
	dir := t.TempDir()
	s := openFile(t, dir)
	swapAt(t, s, sampleEntries)
	if st, _ := openFile(t, dir).Load(t.Context()); !reflect.DeepEqual(st.Entries, sampleEntries) {
		t.Errorf("read back %+v; want %+v", st.Entries, sampleEntries)
	}
	if got, err := fileEntries(dir); err != nil || !reflect.DeepEqual(got, sampleEntries) {
		t.Errorf("read back from the file: %+v, %v", got, err)
	}
	swapAt(t, s, nil)
	if st, _ := openFile(t, dir).Load(t.Context()); len(st.Entries) != 0 {
		t.Errorf("after saving nothing: %v", st.Entries)
	}
	names, _ := os.ReadDir(dir)
	if len(names) != 1 || names[0].Name() != fileName {
		t.Errorf("directory holds %v, want only %s", names, fileName)
	}
}

// TestStoreSwapIsACompareAndSwap: a swap at a revision that is not the
// last one is a conflict and saves nothing; each save moves the revision.
func TestStoreSwapIsACompareAndSwap(t *testing.T) {
	dir := t.TempDir()
	s := openFile(t, dir)
	st, _ := s.Load(t.Context())
	next, err := s.Swap(t.Context(), st, Write{Entries: sampleEntries[:1]})
	if err != nil || next.Revision <= st.Revision || next.Token != next.Revision {
		t.Fatalf("Swap: state %+v err %v, want a revision after %d", next, err, st.Revision)
	}
	if _, err := s.Swap(t.Context(), st, Write{Entries: sampleEntries}); err != ErrConflict {
		t.Errorf("stale Swap: err %v, want ErrConflict", err)
	}
	if got, _ := fileEntries(dir); len(got) != 1 {
		t.Errorf("a stale swap saved: %+v", got)
	}
}

// TestStoreSaveIsAtomic: a save that cannot finish (the state file's name
// is taken by a non-empty directory, so the rename fails) answers an
// error, leaves no temporary file, and the store keeps its old state.
func TestStoreSaveIsAtomic(t *testing.T) {
	dir := t.TempDir()
	s := openFile(t, dir)
	swapAt(t, s, sampleEntries[:1])
	before, _ := s.Load(t.Context())
	s.path = filepath.Join(dir, "taken")
	if err := os.Mkdir(s.path, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.path, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Swap(t.Context(), before, Write{Entries: sampleEntries}); err == nil {
		t.Fatal("a save over a non-empty directory succeeded")
	}
	if after, _ := s.Load(t.Context()); !reflect.DeepEqual(after, before) {
		t.Errorf("state after a failed save %+v, want the old %+v", after, before)
	}
	names, _ := os.ReadDir(dir)
	for _, n := range names {
		if strings.HasPrefix(n.Name(), tempPrefix) {
			t.Errorf("temporary file %s left behind", n.Name())
		}
	}
}

// TestStoreFailedSaveKeepsOldState: a save that fails before it writes
// anything (the storage directory was replaced by a regular file) answers
// an error naming what failed, the store keeps its old state and
// revision, and the file it had is untouched.
func TestStoreFailedSaveKeepsOldState(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := openFile(t, dir)
	swapAt(t, s, sampleEntries[:1])
	before, _ := s.Load(t.Context())
	aside := dir + ".aside"
	if err := os.Rename(dir, aside); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := s.Swap(t.Context(), before, Write{Entries: sampleEntries})
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Swap: %v, want an error naming %s", err, dir)
	}
	if after, _ := s.Load(t.Context()); !reflect.DeepEqual(after, before) {
		t.Errorf("state after a failed save %+v, want the old %+v", after, before)
	}
	if _, err := s.Swap(t.Context(), State{Token: before.Token + 1}, Write{Entries: sampleEntries}); err != ErrConflict {
		t.Errorf("the failed save moved the revision: a swap at the next one answered %v", err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(aside, dir); err != nil {
		t.Fatal(err)
	}
	if got, err := fileEntries(dir); err != nil || !reflect.DeepEqual(got, sampleEntries[:1]) {
		t.Errorf("file after a failed save: %+v %v", got, err)
	}
}

// TestStoreCorruptFileRefuses: a file that does not parse, or does not
// make sense, is an error naming the file, and opening leaves it as it
// was.
func TestStoreCorruptFileRefuses(t *testing.T) {
	for name, content := range map[string]string{
		"torn":      `{"maintenance":[{"backend":"a","rea`,
		"not json":  "garbage",
		"empty":     "",
		"unknown":   `{"maintenance":[],"extra":1}`,
		"duplicate": `{"maintenance":[{"backend":"a"},{"backend":"a"}]}`,
		"nameless":  `{"maintenance":[{"reason":"x"}]}`,
		"trailing":  `{"maintenance":[]} {}`,
		"bad time":  `{"maintenance":[{"backend":"a","since":"yesterday"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, fileName)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := OpenFile(dir)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "corrupt") {
				t.Fatalf("err %v, want an error naming %s corrupt", err, path)
			}
			if got, _ := os.ReadFile(path); string(got) != content {
				t.Errorf("file changed to %q", got)
			}
			if _, err := fileEntries(dir); err == nil {
				t.Error("reading the file accepted it")
			}
		})
	}
}

// TestStoreUnreadableFileRefuses: a state file that cannot be read (here
// a directory, which is not a regular file either) is an error naming it.
func TestStoreUnreadableFileRefuses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, fileName)
	if err := os.Mkdir(path, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(dir); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("err %v, want an error naming %s", err, path)
	}
}

// TestStoreFIFORefusedWithoutHanging: a FIFO in place of the state file
// is a start-up error naming it, at once: opening it does not wait for a
// writer.
func TestStoreFIFORefusedWithoutHanging(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, fileName)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := OpenFile(dir)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("err %v, want an error naming %s as not a regular file", err, path)
		}
	case <-time.After(10 * time.Second):
		// Unblock the open so that the goroutine ends.
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("opening a FIFO as the state file hangs")
	}
}

// TestStoreOversizedFileRefused: a state file over 64 MiB is refused by
// its size, before it is read (it is sparse here: reading it would only
// give zeros).
func TestStoreOversizedFileRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, fileName)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64<<20 + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = OpenFile(dir)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "is 67108865 bytes, more than the 67108864") {
		t.Errorf("err %v, want an error naming %s and its size", err, path)
	}
}

// TestStoreOpenRemovesTemporaries: leftovers of a save a crash
// interrupted are removed; the state file is kept.
func TestStoreOpenRemovesTemporaries(t *testing.T) {
	dir := t.TempDir()
	swapAt(t, openFile(t, dir), sampleEntries)
	leftover := filepath.Join(dir, tempPrefix+"123")
	if err := os.WriteFile(leftover, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openFile(t, dir)
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("leftover still there: %v", err)
	}
	if st, _ := s.Load(t.Context()); !reflect.DeepEqual(st.Entries, sampleEntries) {
		t.Errorf("state file lost: %+v", st.Entries)
	}
}
