package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/probegate/probegate/collector/fleet"
)

// verdictRecorder runs a store's WatchVerdicts and hands on its updates
// one by one.
type verdictRecorder struct {
	*recorder[VerdictUpdate]
}

func startVerdictWatch(t *testing.T, s *etcdStore) verdictRecorder {
	return verdictRecorder{startRecorder(t, 15*time.Second, s.WatchVerdicts)}
}

// nextOK is the next update, which must not be an Err.
func (w verdictRecorder) nextOK(t *testing.T) VerdictUpdate {
	t.Helper()
	u := w.next(t)
	if u.Err != nil {
		t.Fatalf("the watch of the verdicts failed: %v", u.Err)
	}
	return u
}

// verdictsOf maps replica/backend to the value, "nil" for none.
func verdictsOf(vs []StoredVerdict) map[string]string {
	m := map[string]string{}
	for _, v := range vs {
		value := "nil"
		if v.Value != nil {
			value = string(v.Value)
		}
		m[v.Replica+"/"+v.Backend] = value
	}
	return m
}

func sameVerdicts(got []StoredVerdict, want map[string]string) bool {
	return fmt.Sprint(verdictsOf(got)) == fmt.Sprint(want)
}

func put(key, value string) fleet.Op { return fleet.Op{Key: key, Value: []byte(value)} }

func (f *etcdFixture) publishVerdicts(t *testing.T, ops ...fleet.Op) int64 {
	t.Helper()
	lease, err := f.store.PublishVerdicts(t.Context(), ops)
	if err != nil {
		t.Fatalf("PublishVerdicts: %v", err)
	}
	return lease
}

func (f *etcdFixture) publish(t *testing.T, name string) {
	t.Helper()
	if err := f.store.Publish(t.Context(), name, []byte(`{"name":"`+name+`"}`)); err != nil {
		t.Fatalf("Publish: %v", err)
	}
}

// verdictKeys counts the keys under the verdicts of f's prefix.
func (f *etcdFixture) verdictKeys(t *testing.T) int64 {
	t.Helper()
	resp, err := f.raw.Get(t.Context(), f.keys.verdicts, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// TestEtcdVerdicts runs the publication and the watch of verdicts against
// a real etcd member, each case under a prefix of its own; two stores on
// one prefix are two replicas.
func TestEtcdVerdicts(t *testing.T) {
	endpoint := startEtcd(t)

	t.Run("another replica's watch reads and follows the verdicts, a delete as nil", func(t *testing.T) {
		a, b := newEtcdFixture(t, endpoint, "/v/follow"), newEtcdFixture(t, endpoint, "/v/follow")
		a.publish(t, "a")
		lease := a.publishVerdicts(t, put(a.store.VerdictKey("a", "x"), "x1"), put(a.store.VerdictKey("a", "y"), "y1"))
		if lease == 0 || lease != int64(a.store.lease) {
			t.Fatalf("PublishVerdicts answered lease %x, want the view's %x", lease, a.store.lease)
		}
		resp, err := a.raw.Get(t.Context(), "/v/follow/verdicts/a/x")
		if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease != lease {
			t.Fatalf("the stored verdict: %+v, %v; want it at <prefix>/verdicts/a/x under lease %x", resp, err, lease)
		}
		w := startVerdictWatch(t, b.store)
		first := w.nextOK(t)
		if !first.Reset || first.Revision != resp.Header.Revision || !sameVerdicts(first.Verdicts, map[string]string{"a/x": "x1", "a/y": "y1"}) {
			t.Fatalf("first update %+v, want a reset with a/x and a/y at revision %d", first, resp.Header.Revision)
		}
		a.publishVerdicts(t, put(a.store.VerdictKey("a", "x"), "x2"), fleet.Op{Key: a.store.VerdictKey("a", "y"), Delete: true})
		next := w.nextOK(t)
		if next.Reset || next.Revision <= first.Revision || !sameVerdicts(next.Verdicts, map[string]string{"a/x": "x2", "a/y": "nil"}) {
			t.Errorf("the change: %+v, want a/x x2 and a/y deleted, after revision %d", next, first.Revision)
		}
		// A replica's name may hold a '/'; a backend's may not.
		a.publishVerdicts(t, put(a.store.VerdictKey("zone/a", "z"), "z1"))
		if got := w.nextOK(t); !sameVerdicts(got.Verdicts, map[string]string{"zone/a/z": "z1"}) || got.Verdicts[0].Replica != "zone/a" {
			t.Errorf("a replica named zone/a: %+v", got.Verdicts)
		}
	})

	t.Run("verdicts end with the publisher's lease: at Withdraw, at a revocation", func(t *testing.T) {
		a, b := newEtcdFixture(t, endpoint, "/v/lease"), newEtcdFixture(t, endpoint, "/v/lease")
		a.publish(t, "a")
		a.publishVerdicts(t, put(a.store.VerdictKey("a", "x"), "x1"), put(a.store.VerdictKey("a", "y"), "y1"))
		w := startVerdictWatch(t, b.store)
		if first := w.nextOK(t); len(first.Verdicts) != 2 {
			t.Fatalf("first update %+v, want a/x and a/y", first)
		}
		if err := a.store.Withdraw(t.Context(), "a"); err != nil {
			t.Fatal(err)
		}
		// Gone once Withdraw returns, not at the lease's expiry.
		if n := a.verdictKeys(t); n != 0 {
			t.Errorf("%d verdict keys left after Withdraw", n)
		}
		if got := w.nextOK(t); !sameVerdicts(got.Verdicts, map[string]string{"a/x": "nil", "a/y": "nil"}) {
			t.Errorf("after Withdraw: %+v, want both verdicts gone", got.Verdicts)
		}
		a.publish(t, "a")
		lease := a.publishVerdicts(t, put(a.store.VerdictKey("a", "x"), "x2"))
		if got := w.nextOK(t); !sameVerdicts(got.Verdicts, map[string]string{"a/x": "x2"}) {
			t.Fatalf("after the new publication: %+v", got.Verdicts)
		}
		// etcd deletes a lease's keys alike when it revokes it and when
		// it expires.
		if _, err := a.raw.Revoke(t.Context(), clientv3.LeaseID(lease)); err != nil {
			t.Fatal(err)
		}
		if got := w.nextOK(t); !sameVerdicts(got.Verdicts, map[string]string{"a/x": "nil"}) {
			t.Errorf("after the lease's revocation: %+v, want a/x gone", got.Verdicts)
		}
	})

	t.Run("a leaseless, an oversized or a malformed key is never handed on", func(t *testing.T) {
		a, b := newEtcdFixture(t, endpoint, "/v/hostile"), newEtcdFixture(t, endpoint, "/v/hostile")
		a.publish(t, "a")
		lease, err := a.raw.Grant(t.Context(), 60)
		if err != nil {
			t.Fatal(err)
		}
		big := strings.Repeat("x", fleet.MaxEncodedVerdict+1)
		hostile := func(suffix string) {
			t.Helper()
			for key, value := range map[string]string{"r/ghost" + suffix: "ghost", "r/big" + suffix: big, "noslash" + suffix: "m",
				"r" + suffix + "/": "m", "/r" + suffix: "m", "r/empty" + suffix: ""} {
				var opts []clientv3.OpOption
				if !strings.Contains(key, "ghost") {
					opts = append(opts, clientv3.WithLease(lease.ID))
				}
				if _, err := a.raw.Put(t.Context(), a.keys.verdicts+key, value, opts...); err != nil {
					t.Fatal(err)
				}
			}
		}
		hostile("")
		a.publishVerdicts(t, put(a.store.VerdictKey("a", "good"), "g1"))
		w := startVerdictWatch(t, b.store)
		if first := w.nextOK(t); !sameVerdicts(first.Verdicts, map[string]string{"a/good": "g1"}) {
			t.Fatalf("first update %+v, want a/good alone", first.Verdicts)
		}
		hostile("2")
		// Rewritten by hand without a lease, the good key holds no
		// verdict any more; the last put tells the test that the watch
		// went past the others.
		if _, err := a.raw.Put(t.Context(), a.store.VerdictKey("a", "good"), "by hand"); err != nil {
			t.Fatal(err)
		}
		a.publishVerdicts(t, put(a.store.VerdictKey("a", "last"), "l1"))
		seen := map[string]string{}
		for seen["a/last"] == "" {
			for k, v := range verdictsOf(w.nextOK(t).Verdicts) {
				seen[k] = v
			}
		}
		if want := map[string]string{"r/ghost2": "nil", "r/big2": "nil", "r/empty2": "nil", "a/good": "nil", "a/last": "l1"}; fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("the watch handed on %v, want %v", seen, want)
		}
	})

	t.Run("without a view lease nothing is written", func(t *testing.T) {
		a := newEtcdFixture(t, endpoint, "/v/nolease")
		key := a.store.VerdictKey("a", "x")
		if _, err := a.store.PublishVerdicts(t.Context(), []fleet.Op{put(key, "x1")}); !errors.Is(err, ErrNoViewLease) {
			t.Fatalf("PublishVerdicts before Publish: %v, want ErrNoViewLease", err)
		}
		if n := a.verdictKeys(t); n != 0 {
			t.Fatalf("%d verdict keys written without a lease", n)
		}
		a.publish(t, "a")
		first := a.publishVerdicts(t, put(key, "x1"))
		if _, err := a.raw.Revoke(t.Context(), clientv3.LeaseID(first)); err != nil {
			t.Fatal(err)
		}
		if _, err := a.store.PublishVerdicts(t.Context(), []fleet.Op{put(key, "x2")}); !errors.Is(err, ErrNoViewLease) {
			t.Fatalf("PublishVerdicts under a revoked lease: %v, want ErrNoViewLease", err)
		}
		if a.store.lease != 0 {
			t.Errorf("the revoked lease %x is kept; the next Publish should find none and grant one", a.store.lease)
		}
		if _, err := a.store.PublishVerdicts(t.Context(), []fleet.Op{put(key, "x2")}); !errors.Is(err, ErrNoViewLease) {
			t.Fatalf("PublishVerdicts once the lease was found gone: %v, want ErrNoViewLease", err)
		}
		a.publish(t, "a")
		second := a.publishVerdicts(t, put(key, "x3"))
		if second == first || second == 0 {
			t.Errorf("after the lease was lost, PublishVerdicts answers lease %x again, want a new one", second)
		}
		resp, err := a.raw.Get(t.Context(), key)
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "x3" || resp.Kvs[0].Lease != second {
			t.Errorf("stored %+v, %v; want x3 under lease %x", resp, err, second)
		}
	})

	t.Run("a refresh of the view that fails keeps its lease and the verdicts under it", func(t *testing.T) {
		a := newEtcdFixture(t, endpoint, "/v/keeplease")
		a.publish(t, "a")
		lease := a.publishVerdicts(t, put(a.store.VerdictKey("a", "x"), "x1"))
		if got := a.store.ViewLease(); got != lease {
			t.Fatalf("ViewLease = %x, want the view's %x", got, lease)
		}
		// A keep-alive cut short (a timeout, a leader election) says
		// nothing of the lease: it is kept for the next refresh.
		expired, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		defer cancel()
		if err := a.store.Publish(expired, "a", []byte("{}")); err == nil {
			t.Fatal("Publish with an expired context succeeded")
		}
		if got := a.store.ViewLease(); got != lease {
			t.Errorf("after a failed refresh ViewLease = %x, want the lease kept, %x", got, lease)
		}
		a.publish(t, "a")
		if got := a.store.ViewLease(); got != lease {
			t.Errorf("after the next refresh ViewLease = %x, want still %x", got, lease)
		}
	})

	t.Run("a write that does not fit is refused whole, naming what is wrong", func(t *testing.T) {
		a := newEtcdFixture(t, endpoint, "/v/refused")
		a.publish(t, "a")
		good := put(a.store.VerdictKey("a", "x"), "x1")
		many := make([]fleet.Op, fleet.MaxWriteOps+1)
		for i := range many {
			many[i] = put(a.store.VerdictKey("a", fmt.Sprint(i)), "v")
		}
		for _, tc := range []struct {
			name string
			ops  []fleet.Op
			want string
		}{
			{"too many operations", many, "129 operations"},
			{"a key of another prefix", []fleet.Op{good, put("/v/other/verdicts/a/x", "x")}, `"/v/other/verdicts/a/x" is not a verdict key`},
			{"a key without a backend", []fleet.Op{good, put(a.keys.verdicts+"a/", "x")}, "is not a verdict key"},
			{"a key twice", []fleet.Op{good, good}, "written twice"},
			{"a put without a value", []fleet.Op{good, put(a.store.VerdictKey("a", "y"), "")}, "has no value"},
			{"a put too large", []fleet.Op{good, put(a.store.VerdictKey("a", "y"), strings.Repeat("x", fleet.MaxEncodedVerdict+1))}, "more than the 1024"},
		} {
			if _, err := a.store.PublishVerdicts(t.Context(), tc.ops); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
			}
		}
		if n := a.verdictKeys(t); n != 0 {
			t.Errorf("%d verdict keys written by refused writes", n)
		}
	})

	t.Run("a read takes every page at one revision, up to its bound", func(t *testing.T) {
		a, b := newEtcdFixture(t, endpoint, "/v/pages"), newEtcdFixture(t, endpoint, "/v/pages")
		a.publish(t, "a")
		want := map[string]string{}
		var ops []fleet.Op
		for i := range 10 {
			ops = append(ops, put(a.store.VerdictKey("a", fmt.Sprintf("b%02d", i)), fmt.Sprint("v", i)))
			want[fmt.Sprintf("a/b%02d", i)] = fmt.Sprint("v", i)
		}
		a.publishVerdicts(t, ops...)
		b.store.verdictReads = verdictLimits{page: 3, max: 100}
		client, err := b.store.conn.get(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		// After the first page, a key of a later page is deleted and a
		// new one put: a read at one revision sees neither.
		pages := &countingKV{KV: client.KV, afterFirst: func() {
			a.publishVerdicts(t, fleet.Op{Key: a.store.VerdictKey("a", "b09"), Delete: true}, put(a.store.VerdictKey("a", "b10"), "new"))
		}}
		client.KV = pages
		read, err := b.store.readVerdicts(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !read.Reset || !sameVerdicts(read.Verdicts, want) || pages.gets != 4 {
			t.Errorf("read %v in %d requests, want %v in 4", verdictsOf(read.Verdicts), pages.gets, want)
		}
		b.store.verdictReads = verdictLimits{page: 3, max: 7}
		read, err = b.store.readVerdicts(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := verdictsOf(read.Verdicts); len(got) != 7 || got["a/b00"] != "v0" || got["a/b06"] != "v6" {
			t.Errorf("read with a bound of 7: %v, want b00..b06", got)
		}
	})
}

// countingKV counts the gets of a store's client, and runs afterFirst
// once, after the first.
type countingKV struct {
	clientv3.KV
	gets       int
	afterFirst func()
}

func (c *countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := c.KV.Get(ctx, key, opts...)
	c.gets++
	if c.gets == 1 {
		c.afterFirst()
	}
	return resp, err
}

// TestEtcdVerdictWatchSurvivesARestart: a watch of the verdicts whose
// etcd is killed says so within the check interval and the request
// timeout (the client would resume the watch in silence once etcd is
// back), and reads every verdict afresh once etcd answers again.
func TestEtcdVerdictWatchSurvivesARestart(t *testing.T) {
	m := newEtcdMember(t)
	m.start(t)
	a, b := newEtcdFixture(t, m.client, "/v/restart"), newEtcdFixture(t, m.client, "/v/restart")
	a.publish(t, "a")
	a.publishVerdicts(t, put(a.store.VerdictKey("a", "x"), "x1"))
	w := startVerdictWatch(t, b.store)
	if first := w.nextOK(t); !sameVerdicts(first.Verdicts, map[string]string{"a/x": "x1"}) {
		t.Fatalf("first update %+v", first)
	}
	m.kill()
	if u := w.next(t); u.Err == nil {
		t.Fatalf("with etcd killed the watch handed on %+v, want an Err", u)
	} else if u.Reset || u.Verdicts != nil || u.Revision != 0 {
		t.Errorf("an Err update carries more: %+v", u)
	}
	m.start(t)
	u := w.next(t)
	for u.Err != nil {
		u = w.next(t)
	}
	if !u.Reset || !sameVerdicts(u.Verdicts, map[string]string{"a/x": "x1"}) {
		t.Fatalf("the first update after the restart: %+v, want a reset with a/x", u)
	}
	// The watch follows again from its fresh read.
	a.publishVerdicts(t, put(a.store.VerdictKey("a", "y"), "y1"))
	if u := w.nextOK(t); u.Reset || !sameVerdicts(u.Verdicts, map[string]string{"a/y": "y1"}) {
		t.Errorf("the next update: %+v, want a/y", u)
	}
}
