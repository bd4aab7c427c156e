package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/common/model"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/silentport"
)

// startEtcd starts one etcd member of Debian's etcd on loopback ports for
// the test, and returns its client URL. The member is killed when the
// test ends.
func startEtcd(t *testing.T) string {
	t.Helper()
	m := newEtcdMember(t)
	m.start(t)
	return m.client
}

// etcdMember is one etcd member the test can kill and start again on the
// same ports and data.
type etcdMember struct {
	client string
	args   []string
	cmd    *exec.Cmd
}

func newEtcdMember(t *testing.T) *etcdMember {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatal("etcd is not installed: run `make deps` (the tests never skip a missing tool)")
	}
	client, peer := "http://"+freeLoopback(t), "http://"+freeLoopback(t)
	m := &etcdMember{client: client, args: []string{bin, "--name=m0", "--data-dir=" + filepath.Join(t.TempDir(), "m0"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=m0=" + peer, "--initial-cluster-state=new",
		"--heartbeat-interval=50", "--election-timeout=500", "--log-level=warn"}}
	t.Cleanup(m.kill)
	return m
}

// start starts the member and waits until it is healthy.
func (m *etcdMember) start(t *testing.T) {
	t.Helper()
	m.cmd = exec.Command(m.args[0], m.args[1:]...)
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(m.client + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd at %s not healthy after 15s: %v", m.client, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill kills the member, if it runs, and waits for it.
func (m *etcdMember) kill() {
	if m.cmd != nil {
		m.cmd.Process.Kill()
		m.cmd.Wait()
		m.cmd = nil
	}
}

// freeLoopback returns a loopback address whose port was free a moment
// ago, drawn from below the kernel's ephemeral range (32768 on Linux), so
// that no outgoing connection takes it before etcd binds it.
func freeLoopback(t *testing.T) string {
	t.Helper()
	for range 200 {
		addr := fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(22000))
		if ln, err := net.Listen("tcp", addr); err == nil {
			ln.Close()
			return addr
		}
	}
	t.Fatal("no free loopback port after 200 tries")
	return ""
}

// etcdFixture is a store under a prefix of its own on the test's etcd,
// and a raw client that plays an operator's etcdctl.
type etcdFixture struct {
	store *etcdStore
	raw   *clientv3.Client
	keys  etcdKeys
}

func newEtcdFixture(t *testing.T, endpoint, prefix string) *etcdFixture {
	t.Helper()
	s, err := openEtcd(config.Etcd{Endpoints: []string{endpoint}, Prefix: prefix,
		DialTimeout: model.Duration(2 * time.Second), RequestTimeout: model.Duration(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return &etcdFixture{store: s, raw: raw, keys: newEtcdKeys(prefix)}
}

func (f *etcdFixture) load(t *testing.T) State {
	t.Helper()
	st, err := f.store.Load(t.Context())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return st
}

func (f *etcdFixture) swap(t *testing.T, base State, w Write) State {
	t.Helper()
	st, err := f.store.Swap(t.Context(), base, w)
	if err != nil {
		t.Fatalf("Swap: %v", err)
	}
	return st
}

func backendsOf(in []entries.Entry) string {
	names := make([]string, len(in))
	for i, e := range in {
		names[i] = e.Backend
	}
	return strings.Join(names, ",")
}

// TestEtcdStore runs the etcd store against a real etcd member, each case
// under a prefix of its own.
func TestEtcdStore(t *testing.T) {
	endpoint := startEtcd(t)
	t.Run("absent key is created only while still absent", func(t *testing.T) {
		f := newEtcdFixture(t, endpoint, "/t/absent")
		empty := f.load(t)
		if empty.Token != 0 || len(empty.Entries) != 0 || empty.Revision == 0 {
			t.Fatalf("empty store: %+v, want no token, no entries, a revision", empty)
		}
		written := f.swap(t, empty, Write{Entries: []entries.Entry{{Backend: "a", Reason: "x"}}, Granted: "a"})
		if written.Token == 0 || backendsOf(written.Entries) != "a" {
			t.Fatalf("written %+v", written)
		}
		if _, err := f.store.Swap(t.Context(), empty, Write{Entries: []entries.Entry{{Backend: "b", Reason: "x"}}, Granted: "b"}); !errors.Is(err, ErrConflict) {
			t.Errorf("a second create from the empty read: %v, want ErrConflict", err)
		}
		if got := f.load(t); backendsOf(got.Entries) != "a" {
			t.Errorf("store holds %s, want a alone", backendsOf(got.Entries))
		}
	})

	t.Run("key deleted by hand means no entries and the next grant creates it", func(t *testing.T) {
		f := newEtcdFixture(t, endpoint, "/t/deleted")
		before := f.swap(t, f.load(t), Write{Entries: []entries.Entry{{Backend: "a", Reason: "x"}}, Granted: "a"})
		if _, err := f.raw.Delete(t.Context(), f.keys.entries); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.Swap(t.Context(), before, Write{Entries: []entries.Entry{{Backend: "b"}}, Granted: "b"}); !errors.Is(err, ErrConflict) {
			t.Fatalf("a write read before the deletion: %v, want ErrConflict", err)
		}
		after := f.load(t)
		if after.Token != 0 || len(after.Entries) != 0 || after.Revision <= before.Revision {
			t.Fatalf("after the deletion: %+v, want no token, no entries, a newer revision", after)
		}
		if got := f.swap(t, after, Write{Entries: []entries.Entry{{Backend: "b", Reason: "x"}}, Granted: "b"}); backendsOf(got.Entries) != "b" {
			t.Errorf("the grant after the deletion wrote %s", backendsOf(got.Entries))
		}
	})

	t.Run("garbage fails closed and is named with its revision", func(t *testing.T) {
		f := newEtcdFixture(t, endpoint, "/t/garbage")
		before := f.swap(t, f.load(t), Write{Entries: []entries.Entry{{Backend: "a", Reason: "x"}}, Granted: "a"})
		put, err := f.raw.Put(t.Context(), f.keys.entries, "{not json")
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.store.Load(t.Context())
		var corrupt *CorruptError
		if !errors.As(err, &corrupt) || corrupt.Revision != put.Header.Revision || corrupt.Key != f.keys.entries {
			t.Fatalf("Load of garbage: %v, want a CorruptError of %s at %d", err, f.keys.entries, put.Header.Revision)
		}
		if _, err := f.store.Swap(t.Context(), before, Write{Entries: nil}); !errors.Is(err, ErrConflict) {
			t.Errorf("a write over the garbage: %v, want ErrConflict", err)
		}
		if resp, _ := f.raw.Get(t.Context(), f.keys.entries); string(resp.Kvs[0].Value) != "{not json" {
			t.Errorf("the garbage was overwritten: %q", resp.Kvs[0].Value)
		}
	})

	t.Run("garbage: the lease keys still end entries, and only end them", func(t *testing.T) {
		f := newEtcdFixture(t, endpoint, "/t/garbage-lease")
		held := f.swap(t, f.load(t), Write{Entries: []entries.Entry{{Backend: "a", Reason: "x", Until: time.Now().Add(time.Hour)}, {Backend: "b", Reason: "open"}},
			Granted: "a", TTL: time.Hour})
		if _, err := f.raw.Put(t.Context(), f.keys.entries, "{not json"); err != nil {
			t.Fatal(err)
		}
		read, err := f.store.Load(t.Context())
		if kept, ended := EndedByLeases(held, read, err); ended {
			t.Fatalf("with every lease alive the corrupt read ended entries: %+v", kept)
		}
		if _, err := f.raw.Revoke(t.Context(), clientv3.LeaseID(held.leases["a"])); err != nil {
			t.Fatal(err)
		}
		// Another hand's lease key is no addition.
		if _, err := f.raw.Put(t.Context(), f.keys.lease("c"), "c"); err != nil {
			t.Fatal(err)
		}
		read, err = f.store.Load(t.Context())
		kept, ended := EndedByLeases(held, read, err)
		if !ended || backendsOf(kept.Entries) != "b" || kept.Token != held.Token || kept.Revision != read.Revision {
			t.Fatalf("after a's lease ended: %+v (ended %v), want b alone, the held token %d, the read's revision %d", kept, ended, held.Token, read.Revision)
		}
		if _, ended := EndedByLeases(kept, read, err); ended {
			t.Error("a read no newer than the state in force ended entries again")
		}
		if _, err := f.store.Swap(t.Context(), kept, Write{Entries: nil}); !errors.Is(err, ErrConflict) {
			t.Errorf("a write from the state the lease keys left: %v, want ErrConflict (the garbage stays)", err)
		}
		if _, ended := EndedByLeases(held, State{Revision: read.Revision + 1}, errors.New("connection refused")); ended {
			t.Error("a failed read ended entries")
		}
	})

	t.Run("a ttl is a lease: its end ends the entry, its renewal replaces it", func(t *testing.T) {
		f := newEtcdFixture(t, endpoint, "/t/lease")
		granted := f.swap(t, f.load(t), Write{Entries: []entries.Entry{{Backend: "a", Reason: "x", Until: time.Now().Add(-time.Hour)}, {Backend: "b", Reason: "open"}},
			Granted: "a", TTL: time.Hour})
		lease := granted.leases["a"]
		if lease == 0 || len(granted.Entries) != 2 {
			t.Fatalf("granted %+v, want a bound to a lease and b", granted.Entries)
		}
		// An until long past ends nothing: the lease decides.
		if got := f.load(t); backendsOf(got.Entries) != "a,b" {
			t.Fatalf("in force %s, want a,b", backendsOf(got.Entries))
		}
		ttl, err := f.raw.TimeToLive(t.Context(), clientv3.LeaseID(lease))
		if err != nil || ttl.GrantedTTL != 3600 {
			t.Fatalf("lease %x: %+v %v, want a granted ttl of 3600 s", lease, ttl, err)
		}
		renewed := f.swap(t, granted, Write{Entries: []entries.Entry{{Backend: "a", Reason: "y"}, {Backend: "b", Reason: "open"}}, Granted: "a", TTL: 2 * time.Hour})
		if renewed.leases["a"] == lease || renewed.leases["a"] == 0 {
			t.Fatalf("renewal kept lease %x", lease)
		}
		if ttl, _ := f.raw.TimeToLive(t.Context(), clientv3.LeaseID(lease)); ttl.TTL != -1 {
			t.Errorf("the replaced lease is alive: ttl %d", ttl.TTL)
		}
		// The store's lease runs out (revoked here, as expiry does).
		if _, err := f.raw.Revoke(t.Context(), clientv3.LeaseID(renewed.leases["a"])); err != nil {
			t.Fatal(err)
		}
		if got := f.load(t); backendsOf(got.Entries) != "b" {
			t.Errorf("in force after the lease ended %s, want b", backendsOf(got.Entries))
		}
		if resp, _ := f.raw.Get(t.Context(), f.keys.entries); !strings.Contains(string(resp.Kvs[0].Value), `"a"`) {
			t.Error("the document was rewritten at the lease's end: nothing should write then")
		}
		ended := f.swap(t, f.load(t), Write{Entries: nil})
		if len(ended.Entries) != 0 {
			t.Errorf("after the end: %+v", ended.Entries)
		}
	})

	t.Run("a retried write whose first attempt landed is a success", func(t *testing.T) {
		f := newEtcdFixture(t, endpoint, "/t/landed")
		loseFirstAnswer := func() {
			lost := false
			f.store.commit = func(txn clientv3.Txn) (*clientv3.TxnResponse, error) {
				resp, err := txn.Commit()
				if !lost {
					lost = true
					return nil, context.DeadlineExceeded
				}
				return resp, err
			}
		}
		loseFirstAnswer()
		granted, err := f.store.Swap(t.Context(), f.load(t), Write{Entries: []entries.Entry{{Backend: "a", Reason: "x"}}, Granted: "a", TTL: time.Hour})
		if err != nil || backendsOf(granted.Entries) != "a" || granted.leases["a"] == 0 {
			t.Fatalf("grant whose answer was lost: %+v, %v; want a, bound to a lease", granted, err)
		}
		resp, err := f.raw.Get(t.Context(), f.keys.lease("a"))
		if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease != granted.leases["a"] {
			t.Fatalf("a's lease key %+v, %v; want it under lease %x", resp, err, granted.leases["a"])
		}
		if loaded := f.load(t); loaded.Token != granted.Token || backendsOf(loaded.Entries) != "a" {
			t.Errorf("stored %+v, want what the grant answered: %+v", loaded, granted)
		}
		loseFirstAnswer()
		ended, err := f.store.Swap(t.Context(), granted, Write{Entries: nil})
		if err != nil || len(ended.Entries) != 0 {
			t.Fatalf("end whose answer was lost: %+v, %v; want a success with no entries", ended, err)
		}
		if ttl, _ := f.raw.TimeToLive(t.Context(), clientv3.LeaseID(granted.leases["a"])); ttl.TTL != -1 {
			t.Errorf("the ended entry's lease is alive: ttl %d", ttl.TTL)
		}
		// Another writer's document is still a conflict on a retry: the
		// first attempt lands nothing, another writer lands first.
		st := f.load(t)
		f.store.commit = func(clientv3.Txn) (*clientv3.TxnResponse, error) {
			f.store.commit = clientv3.Txn.Commit
			if _, err := f.raw.Put(t.Context(), f.keys.entries, `{"maintenance":[]}`); err != nil {
				t.Error(err)
			}
			return nil, context.DeadlineExceeded
		}
		if _, err := f.store.Swap(t.Context(), st, Write{Entries: []entries.Entry{{Backend: "b"}}, Granted: "b"}); !errors.Is(err, ErrConflict) {
			t.Errorf("a retry that finds another writer's document: %v, want ErrConflict", err)
		}
	})

	t.Run("a put under a lease that is gone is hopeless", func(t *testing.T) {
		f := newEtcdFixture(t, endpoint, "/t/hopeless")
		lease, err := f.raw.Grant(t.Context(), 60)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.raw.Revoke(t.Context(), lease.ID); err != nil {
			t.Fatal(err)
		}
		_, err = f.raw.Put(t.Context(), f.keys.lease("a"), "a", clientv3.WithLease(lease.ID))
		if !hopeless(err) {
			t.Errorf("a put under a revoked lease: %v, want an answer retry gives up on", err)
		}
	})

	t.Run("an entry with an until and no lease is not in force", func(t *testing.T) {
		f := newEtcdFixture(t, endpoint, "/t/unleased")
		doc := `{"maintenance":[{"backend":"a","reason":"x","since":"2026-01-01T00:00:00Z","until":"2099-01-01T00:00:00Z","by":"me"},{"backend":"b","reason":"x","since":"2026-01-01T00:00:00Z","by":"me"}]}`
		if _, err := f.raw.Put(t.Context(), f.keys.entries, doc); err != nil {
			t.Fatal(err)
		}
		if _, err := f.raw.Put(t.Context(), f.keys.lease("a"), "a"); err != nil {
			t.Fatal(err)
		}
		if got := f.load(t); backendsOf(got.Entries) != "b" {
			t.Errorf("in force %s, want b alone", backendsOf(got.Entries))
		}
	})

	t.Run("the watch starts at its read and never replays history", func(t *testing.T) {
		f := newEtcdFixture(t, endpoint, "/t/watch")
		st := f.swap(t, f.load(t), Write{Entries: []entries.Entry{{Backend: "old1"}}, Granted: "old1"})
		f.swap(t, st, Write{Entries: []entries.Entry{{Backend: "old2"}}, Granted: "old2"})
		if _, err := f.raw.Delete(t.Context(), f.keys.entries); err != nil {
			t.Fatal(err)
		}
		// The first state is handed on between the watch's read and
		// the start of its watch: a change committed then must be seen,
		// although the watch starts after it.
		var between int64
		w := startWatchWith(t, f.store, func(State) {
			put, err := f.raw.Put(t.Context(), f.keys.entries, `{"maintenance":[{"backend":"between","reason":"x","since":"2026-01-01T00:00:00Z","by":"me"}]}`)
			if err != nil {
				t.Error(err)
				return
			}
			between = put.Header.Revision
		})
		first := w.next(t)
		if len(first.Entries) != 0 || first.Token != 0 {
			t.Fatalf("first state %+v, want the deleted key's: no entries", first)
		}
		if got := w.next(t); backendsOf(got.Entries) != "between" || got.Revision != between {
			t.Fatalf("second state %+v, want the change committed between the read and the watch, at %d (no replay of old1, old2)", got, between)
		}
		st = f.swap(t, f.load(t), Write{Entries: []entries.Entry{{Backend: "new", Reason: "x"}}, Granted: "new", TTL: time.Hour})
		next := w.next(t)
		if backendsOf(next.Entries) != "new" || next.Revision != st.Revision {
			t.Fatalf("next state %+v, want new at %d (no replay of old1, old2)", next, st.Revision)
		}
		if _, err := f.raw.Revoke(t.Context(), clientv3.LeaseID(next.leases["new"])); err != nil {
			t.Fatal(err)
		}
		if ended := w.next(t); len(ended.Entries) != 0 || ended.Revision <= next.Revision {
			t.Errorf("after the lease ended: %+v, want no entries at a newer revision", ended)
		}
		w.stop()
		if w.errs > 0 {
			t.Errorf("the watch reported %d errors", w.errs)
		}
	})

	t.Run("a watch from a compacted revision says so", func(t *testing.T) {
		f := newEtcdFixture(t, endpoint, "/t/compacted")
		snap, err := f.store.read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		st := f.swap(t, f.load(t), Write{Entries: []entries.Entry{{Backend: "x"}}, Granted: "x"})
		st = f.swap(t, st, Write{Entries: []entries.Entry{{Backend: "a"}}, Granted: "a"})
		if _, err := f.raw.Compact(t.Context(), st.Revision); err != nil {
			t.Fatal(err)
		}
		var got error
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		f.store.follow(ctx, snap, func(_ State, err error) { got = err })
		if !errors.Is(got, ErrCompacted) || ctx.Err() != nil {
			t.Errorf("follow from a compacted revision: %v, want it to end saying so", got)
		}
		// A fresh watch reads again and carries on.
		w := startWatch(t, f.store)
		if first := w.next(t); backendsOf(first.Entries) != "a" {
			t.Errorf("the watch after compaction starts at %+v", first)
		}
		w.stop()
	})

	t.Run("replica views count only under a live lease, named and small", func(t *testing.T) {
		f := newEtcdFixture(t, endpoint, "/t/views")
		if err := f.store.Publish(t.Context(), "r0", []byte(`{"name":"r0"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.raw.Put(t.Context(), f.keys.replica("ghost"), `{"name":"ghost","budget_holds":true,"updated":"2020-01-01T00:00:00Z"}`); err != nil {
			t.Fatal(err)
		}
		lease, err := f.raw.Grant(t.Context(), 60)
		if err != nil {
			t.Fatal(err)
		}
		big := `{"name":"big","pad":"` + strings.Repeat("x", MaxViewBytes) + `"}`
		if _, err := f.raw.Put(t.Context(), f.keys.replica("big"), big, clientv3.WithLease(lease.ID)); err != nil {
			t.Fatal(err)
		}
		views, tooMany, err := f.store.Replicas(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, v := range views {
			got[v.Name] = v.Ignored
			if v.Name == "r0" && string(v.Value) != `{"name":"r0"}` {
				t.Errorf("r0's value %q", v.Value)
			}
		}
		if want := map[string]string{"r0": "", "ghost": IgnoredNoLease, "big": IgnoredTooLarge}; fmt.Sprint(got) != fmt.Sprint(want) || tooMany != 0 {
			t.Errorf("views %v (too many %d), want %v", got, tooMany, want)
		}
		for i := range MaxViews {
			if _, err := f.raw.Put(t.Context(), f.keys.replica(fmt.Sprintf("z%02d", i)), "{}"); err != nil {
				t.Fatal(err)
			}
		}
		// ghost and z00..z62 are the MaxViews leaseless keys named; z63
		// is left out, and big and r0, leased, are read all the same.
		if views, tooMany, err = f.store.Replicas(t.Context()); err != nil || len(views) != MaxViews+2 || tooMany != 1 {
			t.Errorf("with %d leaseless keys and 2 leased: listed %d, too many %d, %v; want %d and 1", MaxViews+1, len(views), tooMany, err, MaxViews+2)
		}
		if err := f.store.Withdraw(t.Context(), "r0"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("leaseless keys that sort first push no real view out", func(t *testing.T) {
		f := newEtcdFixture(t, endpoint, "/t/pile")
		for i := range MaxViews + 10 {
			if _, err := f.raw.Put(t.Context(), f.keys.replica(fmt.Sprintf("a%03d", i)), "{}"); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.store.Publish(t.Context(), "r0", []byte(`{"name":"r0"}`)); err != nil {
			t.Fatal(err)
		}
		lease, err := f.raw.Grant(t.Context(), 60)
		if err != nil {
			t.Fatal(err)
		}
		for i := range MaxViews + 2 {
			if _, err := f.raw.Put(t.Context(), f.keys.replica(fmt.Sprintf("s%03d", i)), "{}", clientv3.WithLease(lease.ID)); err != nil {
				t.Fatal(err)
			}
		}
		views, tooMany, err := f.store.Replicas(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		read, noLease, r0 := 0, 0, ""
		for _, v := range views {
			switch {
			case v.Ignored == IgnoredNoLease:
				noLease++
			case v.Ignored == "":
				read++
			}
			if v.Name == "r0" {
				r0 = string(v.Value)
			}
		}
		// r0 sorts before s000..s065: it is among the MaxViews leased
		// views read; of the leased, 3 are left out, of the leaseless 10.
		if r0 != `{"name":"r0"}` || read != MaxViews || noLease != MaxViews || tooMany != 3+10 {
			t.Errorf("r0 %q, read %d, no_lease %d, too many %d; want r0's view, %d read, %d no_lease, 13 too many",
				r0, read, noLease, tooMany, MaxViews, MaxViews)
		}
		if err := f.store.Withdraw(t.Context(), "r0"); err != nil {
			t.Fatal(err)
		}
	})
}

// recorder runs a watch on a goroutine of its own and hands on what the
// watch hands on, one by one, until it is stopped (at the test's end at
// the latest).
type recorder[T any] struct {
	items  chan T
	within time.Duration
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startRecorder runs watch, whose items next waits for within long.
func startRecorder[T any](t *testing.T, within time.Duration, watch func(ctx context.Context, hand func(T))) *recorder[T] {
	ctx, cancel := context.WithCancel(t.Context())
	r := &recorder[T]{items: make(chan T, 256), within: within, cancel: cancel}
	r.wg.Go(func() {
		watch(ctx, func(item T) {
			select {
			case r.items <- item:
			case <-ctx.Done():
			}
		})
	})
	t.Cleanup(r.stop)
	return r
}

func (r *recorder[T]) next(t *testing.T) T {
	t.Helper()
	select {
	case item := <-r.items:
		return item
	case <-time.After(r.within):
		var none T
		t.Fatalf("nothing from the watch within %v", r.within)
		return none
	}
}

func (r *recorder[T]) stop() {
	r.cancel()
	r.wg.Wait()
}

// watchRecorder runs a store's Watch and hands on its states one by one;
// errs counts its errors.
type watchRecorder struct {
	*recorder[State]
	errs int
}

func startWatch(t *testing.T, s Store) *watchRecorder { return startWatchWith(t, s, nil) }

// startWatchWith is startWatch; first, when set, runs with the first state
// before the watch carries on, in the watch's goroutine.
func startWatchWith(t *testing.T, s Store, first func(State)) *watchRecorder {
	w := &watchRecorder{}
	w.recorder = startRecorder(t, 5*time.Second, func(ctx context.Context, hand func(State)) {
		s.Watch(ctx, func(st State, err error) {
			if err != nil {
				w.errs++
				return
			}
			if first != nil {
				first(st)
				first = nil
			}
			hand(st)
		})
	})
	return w
}

// TestEtcdStartsOfflineWithAPassword: with a username and a password,
// opening a store whose cluster cannot be reached neither fails nor
// waits; an operation fails within its own deadline, and Close returns.
func TestEtcdStartsOfflineWithAPassword(t *testing.T) {
	start := time.Now()
	s, err := openEtcd(config.Etcd{Endpoints: []string{"https://" + freeLoopback(t)}, Prefix: "/t/offline",
		Username: "probegate", Password: "hunter2",
		DialTimeout: model.Duration(time.Second), RequestTimeout: model.Duration(time.Second)})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("open took %v", d)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := s.Load(ctx); err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("Load of an unreachable cluster: %v after %v, want an error within its deadline", err, time.Since(start))
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestFoldSkipsWhatTheReadHolds: events at or before the revision of the
// read a snapshot started from are history already in it, and change
// nothing; a later one does.
func TestFoldSkipsWhatTheReadHolds(t *testing.T) {
	keys := newEtcdKeys("/p")
	snap := etcdSnapshot{keys: keys, read: 10, revision: 10, token: 9, document: []byte(`{"maintenance":[]}`), leases: map[string]int64{}}
	old := []*clientv3.Event{
		{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(keys.entries), Value: []byte(`{"maintenance":[{"backend":"stale"}]}`), ModRevision: 5}},
		{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(keys.lease("stale")), Lease: 3, ModRevision: 10}},
	}
	if snap.fold(old) || snap.revision != 10 || snap.token != 9 || len(snap.leases) != 0 {
		t.Fatalf("history changed the snapshot: %+v", snap)
	}
	if !snap.fold([]*clientv3.Event{{Type: mvccpb.DELETE, Kv: &mvccpb.KeyValue{Key: []byte(keys.entries), ModRevision: 11}},
		{Type: mvccpb.PUT, Kv: &mvccpb.KeyValue{Key: []byte(keys.lease("a")), Lease: 4, ModRevision: 11}}}) ||
		snap.revision != 11 || snap.document != nil || snap.token != 0 || snap.leases["a"] != 4 {
		t.Errorf("a later transaction: %+v, want an absent document and a's lease key at 11", snap)
	}
}

// TestEtcdReconnectsWithinASecond: a store cut from etcd for several
// seconds reads it again within a second of etcd answering. gRPC's
// default back-off, by then several seconds between attempts, kept a
// replica behind long after the cut healed.
func TestEtcdReconnectsWithinASecond(t *testing.T) {
	m := newEtcdMember(t)
	m.start(t)
	f := newEtcdFixture(t, m.client, "/t/reconnect")
	f.load(t)
	m.kill()
	for end := time.Now().Add(6 * time.Second); time.Now().Before(end); {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		f.store.Load(ctx)
		cancel()
	}
	m.start(t)
	healthy := time.Now()
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		_, err := f.store.Load(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Since(healthy) > 5*time.Second {
			t.Fatalf("no read 5s after etcd was back: %v", err)
		}
	}
	if d := time.Since(healthy); d > time.Second {
		t.Errorf("the store read etcd again %v after it answered, want within a second", d)
	}
}

// TestRetryStopsAtAHopelessAnswer: a lease that is gone, refused
// credentials or permissions do not pass by waiting, and are answered at
// once; an error that may pass (a leader election) is retried until the
// request's timeout.
func TestRetryStopsAtAHopelessAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &etcdStore{requestTimeout: 2 * time.Second}
		for _, hopeless := range []error{rpctypes.ErrLeaseNotFound, rpctypes.ErrPermissionDenied, rpctypes.ErrAuthFailed} {
			calls, start := 0, time.Now()
			err := s.retry(t.Context(), func(context.Context) error { calls++; return fmt.Errorf("etcd: %w", hopeless) })
			if !errors.Is(err, hopeless) || calls != 1 || time.Since(start) != 0 {
				t.Errorf("%v: %d calls over %v, answered %v; want one call, at once", hopeless, calls, time.Since(start), err)
			}
		}
		calls, start := 0, time.Now()
		s.retry(t.Context(), func(context.Context) error { calls++; return rpctypes.ErrNoLeader })
		if calls < 10 || time.Since(start) != 2*time.Second {
			t.Errorf("no leader: %d calls over %v, want retries for the request's 2s", calls, time.Since(start))
		}
	})
}

// TestEtcdWriteEndsWithinTheRequestTimeout: a write to a cluster that
// cannot be reached answers an error within request_timeout, whatever
// the caller's context, with credentials (the client authenticates while
// it connects) and over TLS alike: it waited on the connection for as
// long as the request lasted, which for an HTTP client is for ever.
func TestEtcdWriteEndsWithinTheRequestTimeout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint string
		username string
	}{
		{"credentials, nothing listening", "http://" + freeLoopback(t), "probegate"},
		{"credentials, a listener that never answers", "http://" + silentport.Listen(t), "probegate"},
		{"credentials and TLS, a listener that never answers", "https://" + silentport.Listen(t), "probegate"},
		{"TLS, a listener that never answers", "https://" + silentport.Listen(t), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Etcd{Endpoints: []string{tc.endpoint}, Prefix: "/t/offline", Username: tc.username,
				DialTimeout: model.Duration(time.Second), RequestTimeout: model.Duration(time.Second)}
			if tc.username != "" {
				cfg.Password = "hunter2"
			}
			s, err := openEtcd(cfg)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer s.Close()
			// The test's own bound, far beyond the one asserted, so that
			// a write that never ends fails the test rather than hangs it.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			start := time.Now()
			_, err = s.Swap(ctx, State{}, Write{Entries: []entries.Entry{{Backend: "a", Reason: "x"}}, Granted: "a", TTL: time.Hour})
			// request_timeout is 1s; a second more for a loaded machine.
			if took := time.Since(start); err == nil || took > 2*time.Second {
				t.Errorf("Swap against an unreachable cluster: %v after %v, want an error within the 1s request timeout", err, took)
			}
		})
	}
}

// TestEtcdWriteWithAuthEndsWithinTheRequestTimeoutOnceStopped: a replica
// that authenticated with a real etcd and then lost it answers a write
// within request_timeout, and so does one that starts while it is away.
func TestEtcdWriteWithAuthEndsWithinTheRequestTimeoutOnceStopped(t *testing.T) {
	m := newEtcdMember(t)
	m.start(t)
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{m.client}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.UserAdd(t.Context(), "root", "hunter2"); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.UserGrantRole(t.Context(), "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.AuthEnable(t.Context()); err != nil {
		t.Fatal(err)
	}
	cfg := config.Etcd{Endpoints: []string{m.client}, Prefix: "/t/auth", Username: "root", Password: "hunter2",
		DialTimeout: model.Duration(time.Second), RequestTimeout: model.Duration(time.Second)}
	connected, err := openEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer connected.Close()
	// The client authenticates while it connects, in the background.
	var base State
	for deadline := time.Now().Add(10 * time.Second); ; {
		if base, err = connected.Load(t.Context()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Load with credentials: %v", err)
		}
	}
	m.kill()
	late, err := openEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	for name, s := range map[string]*etcdStore{"connected before the stop": connected, "opened after it": late} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		start := time.Now()
		_, err := s.Swap(ctx, base, Write{Entries: []entries.Entry{{Backend: "a", Reason: "x"}}, Granted: "a", TTL: time.Hour})
		cancel()
		if took := time.Since(start); err == nil || took > 2*time.Second {
			t.Errorf("%s: Swap with etcd stopped: %v after %v, want an error within the 1s request timeout", name, err, took)
		}
	}
}
