package store

import (
	"strings"
	"testing"

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
	if err := NewApplied(dir, poolA).Write(State{Entries: []entries.Entry{{Backend: "b01", Reason: "disk"}}, Revision: 7, Token: 6}); err != nil {
		t.Fatal(err)
	}
	st, ok, err := NewApplied(dir, poolB).Read()
	if ok || len(st.Entries) != 0 || err == nil || !strings.Contains(err.Error(), `"etcd /probegate/a"`) || !strings.Contains(err.Error(), `"etcd /probegate/b"`) {
		t.Errorf("pool b read pool a's state: %+v, %v, %v; want nothing and an error naming both stores", st, ok, err)
	}
	st, ok, err = NewApplied(dir, movedA).Read()
	if !ok || err != nil || len(st.Entries) != 1 || st.Entries[0].Backend != "b01" || st.Revision != 7 || st.Token != 6 {
		t.Errorf("pool a at other endpoints read %+v, %v, %v; want b01 at 7, token 6", st, ok, err)
	}
}
