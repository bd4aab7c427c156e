package maintenance

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/pool"
)

var storeTestEntries = []pool.Maintenance{
	{Backend: "a", Reason: "disk swap", Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), By: "alice"},
	{Backend: "b", Reason: "kernel", Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Until: time.Date(2026, 1, 2, 5, 4, 5, 0, time.UTC), By: "127.0.0.1:5555"},
}

// TestStoreMissingFileIsEmpty: a storage directory that does not exist is
// created (0o750) and holds no entries.
func TestStoreMissingFileIsEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "sub")
	_, entries, err := Open(dir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("Open: %v, %v", entries, err)
	}
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o750 {
		t.Errorf("storage dir: %v %v, want mode 0750", info, err)
	}
}

// TestStoreSaveRoundTrips: what Save wrote, Open reads back, and the save
// leaves no temporary file behind.
func TestStoreSaveRoundTrips(t *testing.T) {
	dir := t.TempDir()
	s, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(storeTestEntries); err != nil {
		t.Fatal(err)
	}
	_, got, err := Open(dir)
	if err != nil || !reflect.DeepEqual(got, storeTestEntries) {
		t.Errorf("read back %+v, %v; want %+v", got, err, storeTestEntries)
	}
	if err := s.Save(nil); err != nil {
		t.Fatal(err)
	}
	if _, got, err = Open(dir); err != nil || len(got) != 0 {
		t.Errorf("after saving nothing: %v, %v", got, err)
	}
	names, _ := os.ReadDir(dir)
	if len(names) != 1 || names[0].Name() != FileName {
		t.Errorf("directory holds %v, want only %s", names, FileName)
	}
}

// TestStoreSaveIsAtomic: a save that cannot finish (the state file's name
// is taken by a directory, so the rename fails) leaves the old content
// and no temporary file.
func TestStoreSaveIsAtomic(t *testing.T) {
	dir := t.TempDir()
	s, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.path = filepath.Join(dir, "taken")
	if err := os.Mkdir(filepath.Join(dir, "taken"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "taken", "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(storeTestEntries); err == nil {
		t.Fatal("Save over a non-empty directory succeeded")
	}
	names, _ := os.ReadDir(dir)
	for _, n := range names {
		if strings.HasPrefix(n.Name(), tempPrefix) {
			t.Errorf("temporary file %s left behind", n.Name())
		}
	}
}

// TestStoreCorruptFileRefuses: a file that does not parse, or does not
// make sense, is an error naming the file, and Open leaves it as it was.
func TestStoreCorruptFileRefuses(t *testing.T) {
	for name, content := range map[string]string{
		"torn":      `{"maintenance":[{"backend":"a","rea`,
		"not json":  "garbage",
		"unknown":   `{"maintenance":[],"extra":1}`,
		"duplicate": `{"maintenance":[{"backend":"a"},{"backend":"a"}]}`,
		"nameless":  `{"maintenance":[{"reason":"x"}]}`,
		"trailing":  `{"maintenance":[]} {}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := Open(dir)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("err %v, want an error naming %s", err, path)
			}
			if got, _ := os.ReadFile(path); string(got) != content {
				t.Errorf("file changed to %q", got)
			}
		})
	}
}

// TestStoreUnreadableFileRefuses: a state file that cannot be read is an
// error naming it.
func TestStoreUnreadableFileRefuses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.Mkdir(path, 0o750); err != nil { // reading a directory fails
		t.Fatal(err)
	}
	if _, _, err := Open(dir); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("err %v, want an error naming %s", err, path)
	}
}

// TestStoreOpenRemovesTemporaries: leftovers of a save a crash
// interrupted are removed; the state file is kept.
func TestStoreOpenRemovesTemporaries(t *testing.T) {
	dir := t.TempDir()
	leftover := filepath.Join(dir, tempPrefix+"123")
	if err := os.WriteFile(leftover, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("leftover still there: %v", err)
	}
}
