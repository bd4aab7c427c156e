package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/probegate/probegate/collector/fleet"
)

var _ Verdicts = (*etcdStore)(nil)

const (
	// verdictPageKeys is how many keys one request of a read of the
	// verdicts takes: some 750 KB of real verdicts of about 150 bytes
	// with their keys, so that a read of many thousands stays within
	// what etcd answers at once.
	verdictPageKeys = 5000
	// verdictCheckInterval is how often a watch of the verdicts checks
	// that the store answers. A watch on a member that was killed or cut
	// off says nothing: the client reconnects it behind the scenes and
	// it resumes once the member is back. Its caller must know in the
	// meantime (it falls back to probing every backend itself when the
	// store is unsynced for longer than the view lease), so the watch
	// reads one key this often and breaks when that fails: within this
	// interval and the request timeout of the store going away (7 s by
	// default, within the view lease).
	verdictCheckInterval = ReplicaTTL / 5
)

// verdictLimits bounds the reads of the verdicts: a page of keys per
// request and a total.
type verdictLimits struct {
	page, max int
}

// verdictReadLimits are the bounds of a running probegate.
func verdictReadLimits() verdictLimits {
	return verdictLimits{page: verdictPageKeys, max: MaxVerdictKeys}
}

// VerdictKey is <prefix>/verdicts/<replica>/<backend>.
func (s *etcdStore) VerdictKey(replica, backend string) string {
	return s.keys.verdict(replica, backend)
}

// PublishVerdicts writes ops, one write of fleet.Split (at most
// fleet.MaxWriteOps operations, each on a key of VerdictKey), in one
// transaction, every put under the lease Publish granted this replica's
// view, and returns that lease's id. A write that does not fit is refused
// before anything is sent, naming what is wrong.
//
// Without a view lease (Publish has not succeeded yet, or found its lease
// lost and could not grant another) it writes nothing, and its error
// wraps ErrNoViewLease. When etcd answers that the lease is gone, it
// forgets the lease, so that the next Publish grants a new one, and its
// error wraps ErrNoViewLease too. The lease's lock is not held while the
// write is under way: Publish, which refreshes the lease, must not wait
// for a write of verdicts to a store that does not answer.
func (s *etcdStore) PublishVerdicts(ctx context.Context, ops []fleet.Op) (int64, error) {
	s.leaseMu.Lock()
	lease := s.lease
	s.leaseMu.Unlock()
	if lease == 0 {
		return 0, fmt.Errorf("etcd: publish verdicts: %w", ErrNoViewLease)
	}
	txn, err := s.verdictTxn(ops, lease)
	if err != nil {
		return 0, fmt.Errorf("etcd: publish verdicts: %w", err)
	}
	if len(txn) == 0 {
		return int64(lease), nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.requestTimeout)
	defer cancel()
	client, err := s.conn.get(ctx)
	if err != nil {
		return 0, fmt.Errorf("etcd: publish verdicts: %w", err)
	}
	// A retry is safe: a transaction of puts and deletes that landed
	// lands again the same.
	err = s.retry(ctx, func(ctx context.Context) error {
		_, err := client.Txn(ctx).Then(txn...).Commit()
		return err
	})
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		s.leaseMu.Lock()
		if s.lease == lease {
			s.setLeaseLocked(0)
		}
		s.leaseMu.Unlock()
		return 0, fmt.Errorf("etcd: publish verdicts under lease %x: %w: %w", lease, ErrNoViewLease, err)
	}
	if err != nil {
		return 0, fmt.Errorf("etcd: publish verdicts: %w", err)
	}
	return int64(lease), nil
}

// verdictTxn checks ops and gives the transaction's operations, every
// put under lease.
func (s *etcdStore) verdictTxn(ops []fleet.Op, lease clientv3.LeaseID) ([]clientv3.Op, error) {
	if len(ops) > fleet.MaxWriteOps {
		return nil, fmt.Errorf("%d operations in one write, more than the %d one may have", len(ops), fleet.MaxWriteOps)
	}
	txn := make([]clientv3.Op, len(ops))
	seen := make(map[string]bool, len(ops))
	for i, op := range ops {
		if _, _, ok := s.keys.verdictOf([]byte(op.Key)); !ok {
			return nil, fmt.Errorf("key %q is not a verdict key (%s<replica>/<backend>)", op.Key, s.keys.verdicts)
		}
		if seen[op.Key] {
			return nil, fmt.Errorf("key %q is written twice in one write", op.Key)
		}
		seen[op.Key] = true
		switch {
		case op.Delete:
			txn[i] = clientv3.OpDelete(op.Key)
		case len(op.Value) == 0:
			return nil, fmt.Errorf("the put of key %q has no value", op.Key)
		case len(op.Value) > fleet.MaxEncodedVerdict:
			return nil, fmt.Errorf("the put of key %q has %d bytes, more than the %d a verdict may have", op.Key, len(op.Value), fleet.MaxEncodedVerdict)
		default:
			txn[i] = clientv3.OpPut(op.Key, string(op.Value), clientv3.WithLease(lease))
		}
	}
	return txn, nil
}

// WatchVerdicts reads every verdict key at one revision and hands them on
// with Reset, then follows the verdict keys from the next revision on,
// handing on the changes of each response of the watch (a delete, a
// lease's end among them, with Value nil). A verdict counts only while
// its key is attached to a lease (etcd deletes a lease's keys when it
// ends, so a key with a lease is under a live one: a leaseless key was
// written by hand and says nothing of a live replica), its value is at
// most fleet.MaxEncodedVerdict bytes, and its key parses as
// <replica>/<backend>. A key that does not parse is never handed on; a
// put of one that does not count otherwise is handed on as Value nil,
// since it replaced whatever verdict the key held.
//
// A read that fails, or a watch that breaks (compacted, its member
// without a leader or not answering), is handed on as an Err, and the
// watch starts again from a fresh read. update runs on the watching
// goroutine, until ctx ends.
func (s *etcdStore) WatchVerdicts(ctx context.Context, update func(VerdictUpdate)) {
	var read VerdictUpdate
	s.readThenFollow(ctx,
		func(ctx context.Context) (err error) {
			read, err = s.readVerdicts(ctx)
			return err
		},
		func(err error) { update(VerdictUpdate{Err: err}) },
		func() {
			// The read is the caller's once handed on: the watch holds
			// no second copy of it while it follows.
			rev := read.Revision
			update(read)
			read = VerdictUpdate{}
			err := s.followVerdicts(ctx, rev, update)
			if ctx.Err() == nil {
				update(VerdictUpdate{Err: fmt.Errorf("etcd: the watch of %s from revision %d: %w", s.keys.verdicts, rev+1, err)})
			}
		})
}

// readVerdicts reads the verdict keys at one revision, the revision of
// its first request, in pages of s.verdictReads.page keys (each request
// retried on its own within the request timeout), and at most
// s.verdictReads.max keys in all.
func (s *etcdStore) readVerdicts(ctx context.Context) (VerdictUpdate, error) {
	read := VerdictUpdate{Reset: true}
	from, end := s.keys.verdicts, clientv3.GetPrefixRangeEnd(s.keys.verdicts)
	for taken := 0; taken < s.verdictReads.max; {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(int64(min(s.verdictReads.page, s.verdictReads.max-taken)))}
		if read.Revision != 0 {
			opts = append(opts, clientv3.WithRev(read.Revision))
		}
		var resp *clientv3.GetResponse
		err := s.retry(ctx, func(ctx context.Context) error {
			client, err := s.conn.get(ctx)
			if err != nil {
				return err
			}
			resp, err = client.Get(ctx, from, opts...)
			return err
		})
		if err != nil {
			return VerdictUpdate{}, fmt.Errorf("etcd: read %s: %w", s.keys.verdicts, err)
		}
		if read.Revision == 0 {
			read.Revision = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if v, ok := s.storedVerdict(kv); ok && v.Value != nil {
				read.Verdicts = append(read.Verdicts, v)
			}
		}
		taken += len(resp.Kvs)
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return read, nil
}

// followVerdicts hands on the changes of the verdict keys from the
// revision after rev, until the watch breaks, the store stops answering
// (watchAnswers), or ctx ends. Its error says why it ended.
func (s *etcdStore) followVerdicts(ctx context.Context, rev int64, update func(VerdictUpdate)) error {
	client, err := s.conn.get(ctx)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancelCause(clientv3.WithRequireLeader(ctx))
	var checks sync.WaitGroup
	defer checks.Wait()
	defer cancel(nil)
	// The check runs beside the watch from the start: Watch itself waits
	// until etcd has created the watch, for as long as etcd is away.
	checks.Go(func() { s.watchAnswers(wctx, client, cancel) })
	for resp := range client.Watch(wctx, s.keys.verdicts, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := resp.Err(); err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				return fmt.Errorf("compacted up to %d: %w", resp.CompactRevision, ErrCompacted)
			}
			return err
		}
		var changed []StoredVerdict
		for _, ev := range resp.Events {
			// A delete's kv has neither a value nor a lease: its
			// verdict is nil.
			if v, ok := s.storedVerdict(ev.Kv); ok {
				changed = append(changed, v)
			}
		}
		if len(changed) > 0 {
			update(VerdictUpdate{Verdicts: changed, Revision: resp.Header.Revision})
		}
	}
	if err := context.Cause(wctx); err != nil {
		return err
	}
	return errors.New("the watch ended")
}

// watchAnswers reads one key, without its value, every
// verdictCheckInterval until ctx ends, and ends ctx with the error of a
// read that fails within the request timeout. A linearizable read with
// ctx's requirement of a leader is answered only by a member that has
// one.
func (s *etcdStore) watchAnswers(ctx context.Context, client *clientv3.Client, fail context.CancelCauseFunc) {
	for sleepCtx(ctx, verdictCheckInterval) {
		err := s.retry(ctx, func(ctx context.Context) error {
			_, err := client.Get(ctx, s.keys.verdicts, clientv3.WithKeysOnly())
			return err
		})
		if err != nil && ctx.Err() == nil {
			fail(fmt.Errorf("the store does not answer: %w", err))
			return
		}
	}
}

// storedVerdict is the verdict kv holds: none when its key does not parse
// as a verdict key, Value nil when it does not count (no lease, empty or
// larger than fleet.MaxEncodedVerdict).
func (s *etcdStore) storedVerdict(kv *mvccpb.KeyValue) (StoredVerdict, bool) {
	replica, backend, ok := s.keys.verdictOf(kv.Key)
	if !ok {
		return StoredVerdict{}, false
	}
	v := StoredVerdict{Replica: replica, Backend: backend}
	if kv.Lease != 0 && len(kv.Value) > 0 && len(kv.Value) <= fleet.MaxEncodedVerdict {
		v.Value = kv.Value
	}
	return v, true
}
