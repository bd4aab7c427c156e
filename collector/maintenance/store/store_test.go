package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config"
)

// TestOpenFileHoldsTheLockUntilClose: the file store of a running
// probegate holds its directory's lock, so an offline stop is refused
// until the store is closed.
func TestOpenFileHoldsTheLockUntilClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(config.Maintenance{Store: config.StoreFile}, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if s.Kind() != config.StoreFile || s.Shared() {
		t.Errorf("kind %s shared %v, want an unshared file store", s.Kind(), s.Shared())
	}
	if _, err := LockDir(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("LockDir while the store is open: %v, want ErrLocked", err)
	}
	s.Close()
	unlock, err := LockDir(dir)
	if err != nil {
		t.Fatalf("LockDir after Close: %v", err)
	}
	unlock()
}

// TestOpenFileLeavesAMissingDirectory: without create, a storage
// directory that does not exist is neither created nor locked.
func TestOpenFileLeavesAMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(config.Maintenance{Store: config.StoreFile}, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("opening created %s: %v", dir, err)
	}
}

// TestOpenEtcdIsShared: maintenance.store etcd opens a shared store,
// without waiting for the cluster (nothing listens on its endpoint).
func TestOpenEtcdIsShared(t *testing.T) {
	cfg := config.Maintenance{Store: config.StoreEtcd, Etcd: config.Etcd{
		Endpoints: []string{"http://127.0.0.1:1"}, Prefix: "/probegate/test", DialTimeout: model.Duration(time.Second),
	}}
	s, err := Open(cfg, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Kind() != config.StoreEtcd || !s.Shared() {
		t.Errorf("kind %s shared %v, want a shared etcd store", s.Kind(), s.Shared())
	}
}

// TestCheckReload: a reload may change max_ttl, but not the store or the
// etcd settings, and the refusal names what changed.
func TestCheckReload(t *testing.T) {
	was := config.Maintenance{Store: config.StoreEtcd, MaxTTL: model.Duration(time.Hour),
		Etcd: config.Etcd{Endpoints: []string{"http://127.0.0.1:2379"}, Prefix: "/probegate/a"}}
	ttl := was
	ttl.MaxTTL = model.Duration(2 * time.Hour)
	if err := CheckReload(was, ttl); err != nil {
		t.Errorf("a new max_ttl refused: %v", err)
	}
	file := was
	file.Store = config.StoreFile
	prefix := was
	prefix.Etcd.Prefix = "/probegate/b"
	endpoints := was
	endpoints.Etcd.Endpoints = []string{"http://127.0.0.1:2380"}
	for _, c := range []struct {
		name string
		now  config.Maintenance
		says string
	}{
		{"store", file, "maintenance.store changed from etcd to file"},
		{"prefix", prefix, "maintenance.etcd changed"},
		{"endpoints", endpoints, "maintenance.etcd changed"},
	} {
		if err := CheckReload(was, c.now); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.says)
		}
	}
}
