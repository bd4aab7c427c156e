package store

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/config"
)

// TestAppliedStateIsServedOnlyToItsStore: the applied state names the
// store it came from. Another pool sharing the storage directory, or the
// same pool under another prefix, finds it and ignores it, with an error
// naming both; the pool it came from reads it back.
func TestAppliedStateIsServedOnlyToItsStore(t *testing.T) {
	dir := t.TempDir()
	poolA := SourceOf(config.Maintenance{Store: config.StoreEtcd, Etcd: config.Etcd{Prefix: "/probegate/a", Endpoints: []string{"http://127.0.0.1:2379"}}})
	poolB := SourceOf(config.Maintenance{Store: config.StoreEtcd, Etcd: config.Etcd{Prefix: "/probegate/b", Endpoints: []string{"http://127.0.0.1:2379"}}})
	movedA := SourceOf(config.Maintenance{Store: config.StoreEtcd, Etcd: config.Etcd{Prefix: "/probegate/a", Endpoints: []string{"http://127.0.0.2:2379"}}})
	if err := NewApplied(dir, poolA).Write(State{Entries: []entries.Entry{{Backend: "b01", Reason: "disk"}}, Revision: 7, Token: 6, leases: map[string]int64{"b01": 9}}); err != nil {
		t.Fatal(err)
	}
	st, ok, err := NewApplied(dir, poolB).Read()
	if ok || len(st.Entries) != 0 || err == nil || !strings.Contains(err.Error(), `"etcd /probegate/a"`) || !strings.Contains(err.Error(), `"etcd /probegate/b"`) {
		t.Errorf("pool b read pool a's state: %+v, %v, %v; want nothing and an error naming both stores", st, ok, err)
	}
	st, ok, err = NewApplied(dir, movedA).Read()
	if !ok || err != nil || len(st.Entries) != 1 || st.Entries[0].Backend != "b01" || st.Revision != 7 || st.Token != 6 || st.leases["b01"] != 9 {
		t.Errorf("pool a at other endpoints read %+v, %v, %v; want b01 bound to lease 9 at 7, token 6", st, ok, err)
	}
}

// TestAppliedStateReadIsGuarded: the applied state is read at start while
// the store may be away, as the file store's state file is: a FIFO in its
// place is refused at once (it hung start-up for good), and so is a
// device behind a symlink (/dev/zero grew the process by gigabytes); a
// file larger than a state may be is refused by its size, without
// reading it (a sparse one of 2 GiB was read whole).
func TestAppliedStateReadIsGuarded(t *testing.T) {
	source := SourceOf(config.Maintenance{Store: config.StoreEtcd, Etcd: config.Etcd{Prefix: "/probegate/a"}})
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, path string)
		want  string
	}{
		{"a FIFO", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"a symlink to /dev/zero", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"a sparse file of 128 MiB", func(t *testing.T, path string) {
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(128 << 20); err != nil {
				t.Fatal(err)
			}
		}, "is 134217728 bytes, more than the 67108864"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewApplied(t.TempDir(), source)
			tc.plant(t, a.Path())
			type result struct {
				ok  bool
				err error
			}
			done := make(chan result, 1)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			go func() {
				_, ok, err := a.Read()
				done <- result{ok, err}
			}()
			select {
			case r := <-done:
				runtime.ReadMemStats(&after)
				if r.ok || r.err == nil || !strings.Contains(r.err.Error(), a.Path()) || !strings.Contains(r.err.Error(), tc.want) {
					t.Errorf("Read: %v, %v; want an error naming %s: %s", r.ok, r.err, a.Path(), tc.want)
				}
				if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
					t.Errorf("Read allocated %d bytes, want what a refusal takes", grew)
				}
			case <-time.After(10 * time.Second):
				// Unblock the open so that the goroutine ends.
				if w, err := os.OpenFile(a.Path(), os.O_WRONLY, 0); err == nil {
					w.Close()
				}
				<-done
				t.Fatal("reading the applied state hangs")
			}
		})
	}
}
