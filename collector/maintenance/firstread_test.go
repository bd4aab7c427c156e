package maintenance

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/entries"
	"github.com/probegate/probegate/collector/maintenance/store"
)

// slowFirstRead is a shared store whose reads, the watch's included,
// wait until first is closed and then answer err (nil: the store's
// state), as a store does whose first read is still in flight at start.
type slowFirstRead struct {
	*memStore
	first chan struct{}
	err   error
}

func (s *slowFirstRead) Load(ctx context.Context) (store.State, error) {
	select {
	case <-ctx.Done():
		return store.State{}, ctx.Err()
	case <-s.first:
	}
	if s.err != nil {
		return store.State{}, s.err
	}
	return s.memStore.Load(ctx)
}

func (s *slowFirstRead) Watch(ctx context.Context, changed func(store.State, error)) {
	select {
	case <-ctx.Done():
		return
	case <-s.first:
	}
	if s.err != nil {
		changed(store.State{}, s.err)
		<-ctx.Done()
		return
	}
	s.memStore.Watch(ctx, changed)
}

// TestFirstReadDoneOnceTheFirstReadEnds: a restarted replica serves its
// saved state at once, but its first read is not done until a read of
// the store has ended, however long that takes; then it is done whether
// the store answered or not, and with the store unreachable the saved
// state stays in force, synced and stale.
func TestFirstReadDoneOnceTheFirstReadEnds(t *testing.T) {
	for _, unreachable := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			dir := t.TempDir()
			saved := entries.Entry{Backend: "b01", Reason: "disk"}
			if err := store.NewApplied(dir, "etcd /p").Write(store.State{Revision: 3, Token: 2, Entries: []entries.Entry{saved}}); err != nil {
				t.Fatal(err)
			}
			s := &slowFirstRead{memStore: newMemStore("etcd", true, saved, entries.Entry{Backend: "b02", Reason: "granted while down"}),
				first: make(chan struct{})}
			if unreachable {
				s.err = errors.New("connection refused")
			}
			p := healthyPool(t, backendNames(3), 2, nil)
			m := NewManager(p, s, store.NewApplied(dir, "etcd /p"), prometheus.NewRegistry(), nil, nil)
			m.Restore()
			runManager(t, m)
			time.Sleep(time.Minute)
			synctest.Wait()
			if m.FirstReadDone() {
				t.Fatalf("unreachable %v: the first read is done while every read still waits", unreachable)
			}
			if got := p.Maintenances(); len(got) != 1 || got[0].Backend != "b01" {
				t.Errorf("unreachable %v: entries in force %+v while the first read waits; want the saved one", unreachable, got)
			}
			close(s.first)
			synctest.Wait()
			if !m.FirstReadDone() {
				t.Fatalf("unreachable %v: the first read ended and is not done", unreachable)
			}
			st := m.Status()
			switch got := p.Maintenances(); {
			case unreachable && (!st.Synced || !st.Stale || len(got) != 1):
				t.Errorf("the store unreachable: status %+v, entries %+v; want the saved state, synced and stale", st, got)
			case !unreachable && (st.Stale || len(got) != 2):
				t.Errorf("the store answered: status %+v, entries %+v; want its two entries, current", st, got)
			}
		})
	}
}
