package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/probegate/probegate/config"
)

// ReplicaTTL is the lease of a replica's view: a replica that dies is gone
// from its peers' lists within this long after its last refresh, so a
// publisher must refresh its view well within it.
const ReplicaTTL = 10 * time.Second

// etcdStore keeps the entries of a pool in etcd, shared by every replica
// under one key prefix (see etcdKeys), and the views the replicas publish
// of themselves. It measures no time itself: an entry's ttl is an etcd
// lease, which expires on the etcd leader's clock.
type etcdStore struct {
	conn           *etcdConn
	keys           etcdKeys
	requestTimeout time.Duration

	// leaseMu guards lease, the lease of this replica's view; 0 until the
	// first publication and after the lease was lost.
	leaseMu sync.Mutex
	lease   clientv3.LeaseID
	// viewLease mirrors lease for readers that must not wait for leaseMu,
	// which Publish holds across its calls to etcd (ViewLease).
	viewLease atomic.Int64

	// commit commits a transaction of Swap: Txn.Commit, which a test
	// replaces to lose the answer of one that landed.
	commit func(clientv3.Txn) (*clientv3.TxnResponse, error)

	// verdictReads bounds WatchVerdicts' reads: verdictReadLimits, which
	// a test makes small.
	verdictReads verdictLimits
}

// openEtcd prepares the client of the etcd cluster of cfg and connects in
// the background: it neither waits for the cluster nor fails when it
// cannot be reached (with a username the etcd client authenticates while
// it connects, and would fail), so a replica serves while etcd is away
// and every operation reports the store unreachable until it is back.
func openEtcd(cfg config.Etcd) (*etcdStore, error) {
	clientCfg, err := etcdClientConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &etcdStore{
		conn:           dialEtcd(clientCfg),
		keys:           newEtcdKeys(cfg.Prefix),
		requestTimeout: time.Duration(cfg.RequestTimeout),
		commit:         clientv3.Txn.Commit,
		verdictReads:   verdictReadLimits(),
	}, nil
}

// etcdClientConfig is the etcd client's configuration for cfg. The
// configuration's validation made every endpoint http:// or every one
// https://, and refused a tls_config or a password with http://.
func etcdClientConfig(cfg config.Etcd) (clientv3.Config, error) {
	var c clientv3.Config
	if slices.ContainsFunc(cfg.Endpoints, func(e string) bool { return strings.HasPrefix(e, "https://") }) {
		tlsConfig, err := commoncfg.NewTLSConfig(&cfg.TLSConfig)
		if err != nil {
			return c, fmt.Errorf("maintenance.etcd.tls_config: %w", err)
		}
		c.TLS = tlsConfig
	}
	password := string(cfg.Password)
	if cfg.PasswordFile != "" {
		data, err := os.ReadFile(cfg.PasswordFile)
		if err != nil {
			return c, fmt.Errorf("maintenance.etcd.password_file: %w", err)
		}
		password = strings.TrimSpace(string(data))
	}
	c.Endpoints = cfg.Endpoints
	c.DialTimeout = time.Duration(cfg.DialTimeout)
	// A member that stops answering is noticed by the keep-alive within
	// a few seconds, and the client moves to another.
	c.DialKeepAliveTime, c.DialKeepAliveTimeout = 2*time.Second, 2*time.Second
	c.Username, c.Password = cfg.Username, password
	c.Logger = zap.NewNop()
	// gRPC's default reconnection back-off grows to two minutes while a
	// member cannot be reached, so a replica cut from etcd for a while
	// would stay behind long after the cut heals. A reconnection attempt
	// is one dial, cheap; capped at half a second, a replica converges
	// within a second of the store answering again.
	c.DialOptions = []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 500 * time.Millisecond},
		MinConnectTimeout: c.DialTimeout,
	})}
	return c, nil
}

// Kind is "etcd".
func (s *etcdStore) Kind() string { return config.StoreEtcd }

// Shared is true: every replica of the pool writes the same keys.
func (s *etcdStore) Shared() bool { return true }

// Load reads the entries in force with a linearizable read.
func (s *etcdStore) Load(ctx context.Context) (State, error) {
	var snap etcdSnapshot
	err := s.retry(ctx, func(ctx context.Context) (err error) {
		snap, err = s.read(ctx)
		return err
	})
	if err != nil {
		return State{}, fmt.Errorf("etcd: read %s: %w", s.keys.entries, err)
	}
	return snap.state()
}

// read takes the entries document and every lease key at one revision.
func (s *etcdStore) read(ctx context.Context) (etcdSnapshot, error) {
	client, err := s.conn.get(ctx)
	if err != nil {
		return etcdSnapshot{}, err
	}
	resp, err := client.Txn(ctx).Then(
		clientv3.OpGet(s.keys.entries),
		clientv3.OpGet(s.keys.leases, clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return etcdSnapshot{}, err
	}
	snap := etcdSnapshot{keys: s.keys, read: resp.Header.Revision, revision: resp.Header.Revision, leases: map[string]int64{}}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		snap.document, snap.token = kvs[0].Value, kvs[0].ModRevision
	}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		snap.leases[strings.TrimPrefix(string(kv.Key), s.keys.leases)] = kv.Lease
	}
	return snap, nil
}

// Swap writes the entries document in a transaction that succeeds only
// while the document is as base read it: its ModRevision unchanged, or
// still absent when base found none (a document deleted by hand since
// is a conflict too, never overwritten by a write that had read it).
// The granted entry with a ttl is bound to a new lease: its lease key is
// put under that lease in the same transaction, and the lease keys of
// the entries this write ends are deleted in it.
//
// One deadline, the request timeout, bounds the whole write: the wait for
// the connection (in which the client authenticates when it has
// credentials, and which never comes while the cluster is away), the
// lease's grant, the transaction and the revocation of ended leases. A
// caller whose context has no deadline of its own (an HTTP request) would
// otherwise wait for as long as the cluster stays away.
func (s *etcdStore) Swap(ctx context.Context, base State, w Write) (State, error) {
	ctx, cancel := context.WithTimeout(ctx, s.requestTimeout)
	defer cancel()
	client, err := s.conn.get(ctx)
	if err != nil {
		return State{}, fmt.Errorf("etcd: write %s: %w", s.keys.entries, err)
	}
	// Every entry keeps the lease base read it bound to, but the one
	// granted, which gets a new lease or none.
	next := withLeases(w.Entries, base.leases)
	var granted clientv3.LeaseID
	if i := indexOf(next, w.Granted); i >= 0 {
		next[i].Lease = 0
		if w.TTL > 0 {
			granted, err = s.grantLease(ctx, client, w.TTL)
			if err != nil {
				return State{}, fmt.Errorf("etcd: grant the lease of %s's entry: %w", w.Granted, err)
			}
			next[i].Lease = int64(granted)
		}
	}
	data, err := encodeDocument(next)
	if err != nil {
		return State{}, err
	}
	cmp := clientv3.Compare(clientv3.ModRevision(s.keys.entries), "=", base.Token)
	if base.Token == 0 {
		cmp = clientv3.Compare(clientv3.CreateRevision(s.keys.entries), "=", 0)
	}
	ops := []clientv3.Op{clientv3.OpGet(s.keys.leases, clientv3.WithPrefix()), clientv3.OpPut(s.keys.entries, string(data))}
	if granted != 0 {
		ops = append(ops, clientv3.OpPut(s.keys.lease(w.Granted), w.Granted, clientv3.WithLease(granted)))
	}
	ended := endedLeases(base.leases, next)
	for name := range ended {
		if name != w.Granted || granted == 0 {
			ops = append(ops, clientv3.OpDelete(s.keys.lease(name)))
		}
	}
	// On a conflict the transaction reads what stands instead, in the
	// same order (the lease keys first), so that a retry can tell its
	// own earlier attempt from another writer's.
	orElse := []clientv3.Op{clientv3.OpGet(s.keys.leases, clientv3.WithPrefix()), clientv3.OpGet(s.keys.entries)}
	var resp *clientv3.TxnResponse
	attempts := 0
	err = s.retry(ctx, func(ctx context.Context) (err error) {
		attempts++
		resp, err = s.commit(client.Txn(ctx).If(cmp).Then(ops...).Else(orElse...))
		return err
	})
	switch {
	case err != nil:
		// The write may still commit once the store recovers, so the
		// lease is left to its ttl rather than revoked under it.
		return State{}, fmt.Errorf("etcd: write %s: %w", s.keys.entries, err)
	case !resp.Succeeded && attempts > 1 && landed(resp, data):
		// An earlier attempt committed and only its answer was lost:
		// the document stands as this write left it (its bytes hold
		// the new lease's id, or are what an end wrote). Reporting a
		// conflict would judge the request again on its own write:
		// an end would find nothing to end, a grant would grant twice.
		token := resp.Responses[1].GetResponseRange().Kvs[0].ModRevision
		for _, lease := range ended {
			s.revoke(ctx, client, clientv3.LeaseID(lease))
		}
		return s.written(resp, next, "", 0, token), nil
	case !resp.Succeeded:
		// A conflict on a first attempt wrote nothing; after a failed
		// one the write may have landed, and its lease is left alone.
		if granted != 0 && attempts == 1 {
			s.revoke(ctx, client, granted)
		}
		return State{}, ErrConflict
	}
	for _, lease := range ended {
		s.revoke(ctx, client, clientv3.LeaseID(lease))
	}
	return s.written(resp, next, w.Granted, granted, resp.Header.Revision), nil
}

// landed reports whether the entries document read by the failed branch
// of a Swap's transaction is the one the Swap writes.
func landed(resp *clientv3.TxnResponse, data []byte) bool {
	kvs := resp.Responses[1].GetResponseRange().Kvs
	return len(kvs) == 1 && bytes.Equal(kvs[0].Value, data)
}

// written is the state a Swap left: the entries it wrote, at token, in
// force as the lease keys read in its transaction and its own put make
// them (granted, when not 0, is the lease it bound name to in that
// transaction; the keys it deleted are of entries it does not keep).
func (s *etcdStore) written(resp *clientv3.TxnResponse, next []leasedEntry, name string, granted clientv3.LeaseID, token int64) State {
	live := map[string]int64{}
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		live[strings.TrimPrefix(string(kv.Key), s.keys.leases)] = kv.Lease
	}
	if granted != 0 {
		live[name] = int64(granted)
	}
	st := State{Revision: resp.Header.Revision, Token: token}
	st.Entries, st.leases = inForceBy(next, live)
	return st
}

// grantLease grants a lease of ttl, rounded up to whole seconds as etcd
// counts them.
func (s *etcdStore) grantLease(ctx context.Context, client *clientv3.Client, ttl time.Duration) (clientv3.LeaseID, error) {
	seconds := int64((ttl + time.Second - 1) / time.Second)
	var grant *clientv3.LeaseGrantResponse
	err := s.retry(ctx, func(ctx context.Context) (err error) {
		grant, err = client.Grant(ctx, seconds)
		return err
	})
	if err != nil {
		return 0, err
	}
	return grant.ID, nil
}

// revoke revokes a lease no entry is bound to any more, within what is
// left of the write's deadline. It only tidies: a lease left behind holds
// no key and expires at its ttl.
func (s *etcdStore) revoke(ctx context.Context, client *clientv3.Client, lease clientv3.LeaseID) {
	client.Revoke(ctx, lease)
}

// endedLeases maps the backends whose entry was bound to a lease (by
// leases) that next does not keep (the entry ended, or was renewed or
// replaced) to that lease.
func endedLeases(leases map[string]int64, next []leasedEntry) map[string]int64 {
	ended := map[string]int64{}
	for backend, lease := range leases {
		if i := indexOf(next, backend); lease != 0 && (i < 0 || next[i].Lease != lease) {
			ended[backend] = lease
		}
	}
	return ended
}

// retry runs op until it succeeds or the request timeout has passed. An
// error from a cluster that lost a member (the leader's election, a
// connection the client has not moved off yet) passes within a second on
// a healthy majority, and should not fail the request. Retrying a swap is
// safe: one that did commit makes the retry a conflict, in which Swap
// finds its own document. An answer that cannot change (hopeless) is not
// retried.
func (s *etcdStore) retry(ctx context.Context, op func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.requestTimeout)
	defer cancel()
	for {
		attempt, done := context.WithTimeout(ctx, s.requestTimeout/2)
		err := op(attempt)
		done()
		if err == nil || ctx.Err() != nil || hopeless(err) {
			return err
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return err
		}
	}
}

// hopeless reports whether err is an answer no retry can change within a
// request: a lease that is gone, credentials or permissions refused, a
// request etcd finds too large. Retrying them only held the request for
// its whole timeout.
func hopeless(err error) bool {
	for _, refusal := range []error{rpctypes.ErrLeaseNotFound, rpctypes.ErrLeaseTTLTooLarge, rpctypes.ErrPermissionDenied,
		rpctypes.ErrAuthFailed, rpctypes.ErrRequestTooLarge, rpctypes.ErrTooManyOps} {
		if errors.Is(err, refusal) {
			return true
		}
	}
	return false
}

// Watch reads the entries and every lease key at one revision, hands on
// the state, and follows the keys from the next revision on, so that it
// never replays history older than its read. Each change is folded into
// what was read, and the state after it handed on. A watch that fails
// (the member lost its leader, or the revision it resumes from was
// compacted) starts again from a fresh read.
func (s *etcdStore) Watch(ctx context.Context, changed func(State, error)) {
	var snap etcdSnapshot
	s.readThenFollow(ctx,
		func(ctx context.Context) error {
			return s.retry(ctx, func(ctx context.Context) (err error) {
				snap, err = s.read(ctx)
				return err
			})
		},
		func(err error) { changed(State{}, fmt.Errorf("etcd: read %s: %w", s.keys.entries, err)) },
		func() {
			changed(snap.state())
			s.follow(ctx, snap, changed)
		})
}

// readThenFollow is the loop of a watch, until ctx ends: read (which
// retries on its own); failed with its error when that fails, a second
// before the next read; else follow, which hands on what was read and
// follows the changes from there until its watch ends, and a fresh read
// a moment later.
func (s *etcdStore) readThenFollow(ctx context.Context, read func(context.Context) error, failed func(error), follow func()) {
	for ctx.Err() == nil {
		if err := read(ctx); err != nil {
			if ctx.Err() == nil {
				failed(err)
			}
			sleepCtx(ctx, time.Second)
			continue
		}
		follow()
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// follow folds the events of one watch from the revision after snap's
// into snap and hands on each state, until the watch ends.
func (s *etcdStore) follow(ctx context.Context, snap etcdSnapshot, changed func(State, error)) {
	client, err := s.conn.get(ctx)
	if err != nil {
		return
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	// One range holds the lease keys and the entries document, and not
	// the replica views, which change every few seconds.
	from, to := s.keys.watched()
	for resp := range client.Watch(wctx, from, clientv3.WithRange(to), clientv3.WithRev(snap.revision+1)) {
		if err := resp.Err(); err != nil {
			if errors.Is(err, rpctypes.ErrCompacted) {
				changed(State{}, fmt.Errorf("etcd: the watch of %s from revision %d, compacted up to %d: %w",
					s.keys.entries, snap.revision+1, resp.CompactRevision, ErrCompacted))
			}
			return
		}
		if snap.fold(resp.Events) {
			changed(snap.state())
		}
	}
}

// Close stops connecting and closes the client.
func (s *etcdStore) Close() error { return s.conn.close() }

// Publish stores one replica's view under this replica's lease, granting
// a new lease when it has none or lost it, and refreshes the lease. The
// view is opaque here: its reader decodes it.
func (s *etcdStore) Publish(ctx context.Context, name string, view []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.requestTimeout)
	defer cancel()
	client, err := s.conn.get(ctx)
	if err != nil {
		return fmt.Errorf("etcd: publish replica %s: %w", name, err)
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if s.lease != 0 {
		// Only a lease etcd no longer knows is replaced: a keep-alive
		// that timed out (a leader election, a slow member) leaves the
		// lease, and every verdict under it, in place for the next try.
		_, err := client.KeepAliveOnce(ctx, s.lease)
		switch {
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			s.setLeaseLocked(0)
		case err != nil:
			return fmt.Errorf("etcd: refresh the replica lease: %w", err)
		}
	}
	if s.lease == 0 {
		grant, err := client.Grant(ctx, int64(ReplicaTTL/time.Second))
		if err != nil {
			return fmt.Errorf("etcd: grant the replica lease: %w", err)
		}
		s.setLeaseLocked(grant.ID)
	}
	if _, err := client.Put(ctx, s.keys.replica(name), string(view), clientv3.WithLease(s.lease)); err != nil {
		return fmt.Errorf("etcd: publish replica %s: %w", name, err)
	}
	return nil
}

// setLeaseLocked sets the lease of this replica's view. The caller holds
// leaseMu.
func (s *etcdStore) setLeaseLocked(lease clientv3.LeaseID) {
	s.lease = lease
	s.viewLease.Store(int64(lease))
}

// ViewLease is the id of the lease of this replica's view now, 0 for
// none: a change means the verdicts written under the lease before are
// gone, or going with it.
func (s *etcdStore) ViewLease() int64 { return s.viewLease.Load() }

// Withdraw removes this replica's view at once, for a clean shutdown.
func (s *etcdStore) Withdraw(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, s.requestTimeout)
	defer cancel()
	client, err := s.conn.get(ctx)
	if err != nil {
		return err
	}
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if s.lease != 0 {
		client.Revoke(ctx, s.lease)
		s.setLeaseLocked(0)
	}
	_, err = client.Delete(ctx, s.keys.replica(name))
	return err
}

// sleepCtx waits d or until ctx ends, and reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func indexOf(in []leasedEntry, name string) int {
	if name == "" {
		return -1
	}
	return slices.IndexFunc(in, func(e leasedEntry) bool { return e.Backend == name })
}
