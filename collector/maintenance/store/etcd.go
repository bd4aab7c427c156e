package store

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	commoncfg "github.com/prometheus/common/config"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/probegate/probegate/collector/maintenance/entries"
	"github.com/probegate/probegate/config"
)

// ReplicaTTL is the lease of a replica's view: a replica that dies is gone
// from its peers' lists within this long after its last refresh, so a
// publisher must refresh its view well within it.
const ReplicaTTL = 10 * time.Second

// etcdStore keeps the entries of a pool in etcd, shared by every replica
// under one key prefix: the entries are one JSON document at
// <prefix>/maintenance, replaced by a transaction that compares its
// ModRevision, and each replica's view lives at <prefix>/replicas/<name>
// under a lease of its own.
type etcdStore struct {
	client         *clientv3.Client
	key            string
	replicasPrefix string
	requestTimeout time.Duration

	// leaseMu guards lease, the lease of this replica's view; 0 until the
	// first publication and after the lease was lost.
	leaseMu sync.Mutex
	lease   clientv3.LeaseID
}

// openEtcd connects to the etcd cluster of cfg. It does not wait for the
// cluster: an unreachable one shows in the first Load.
func openEtcd(cfg config.Etcd) (*etcdStore, error) {
	tlsConfig, err := commoncfg.NewTLSConfig(&cfg.TLSConfig)
	if err != nil {
		return nil, fmt.Errorf("maintenance.etcd.tls_config: %w", err)
	}
	if !usesTLS(cfg.Endpoints) && cfg.TLSConfig == (commoncfg.TLSConfig{}) {
		tlsConfig = nil
	}
	password := string(cfg.Password)
	if cfg.PasswordFile != "" {
		data, err := os.ReadFile(cfg.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("maintenance.etcd.password_file: %w", err)
		}
		password = strings.TrimSpace(string(data))
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: time.Duration(cfg.DialTimeout),
		// A member that stops answering is noticed by the keep-alive
		// within a few seconds, and the client moves to another.
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		TLS:                  tlsConfig,
		Username:             cfg.Username,
		Password:             password,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("maintenance.etcd: %w", err)
	}
	return &etcdStore{
		client:         client,
		key:            cfg.Prefix + "/maintenance",
		replicasPrefix: cfg.Prefix + "/replicas/",
		requestTimeout: time.Duration(cfg.RequestTimeout),
	}, nil
}

func usesTLS(endpoints []string) bool {
	return slices.ContainsFunc(endpoints, func(e string) bool { return strings.HasPrefix(e, "https://") })
}

// Kind is "etcd".
func (s *etcdStore) Kind() string { return config.StoreEtcd }

// Shared is true: every replica of the pool writes the same key.
func (s *etcdStore) Shared() bool { return true }

// Load reads the entries with a linearizable read.
func (s *etcdStore) Load(ctx context.Context) (State, error) {
	var resp *clientv3.GetResponse
	err := s.retry(ctx, func(ctx context.Context) (err error) {
		resp, err = s.client.Get(ctx, s.key)
		return err
	})
	if err != nil {
		return State{}, fmt.Errorf("etcd: read %s: %w", s.key, err)
	}
	if len(resp.Kvs) == 0 {
		return State{}, nil
	}
	return s.decode(resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
}

func (s *etcdStore) decode(value []byte, rev int64) (State, error) {
	entries, err := decodeState(value)
	if err != nil {
		return State{Revision: rev}, fmt.Errorf("etcd: %s at revision %d is corrupt: %w", s.key, rev, err)
	}
	return State{Entries: entries, Revision: rev}, nil
}

// Swap writes entries in a transaction that succeeds only while the key's
// ModRevision is rev (0: the key does not exist yet).
func (s *etcdStore) Swap(ctx context.Context, rev int64, entries []entries.Entry) (int64, error) {
	data, err := encodeState(entries)
	if err != nil {
		return 0, err
	}
	var resp *clientv3.TxnResponse
	err = s.retry(ctx, func(ctx context.Context) (err error) {
		resp, err = s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(s.key), "=", rev)).
			Then(clientv3.OpPut(s.key, string(data))).
			Commit()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("etcd: write %s: %w", s.key, err)
	}
	if !resp.Succeeded {
		return 0, ErrConflict
	}
	return resp.Header.Revision, nil
}

// retry runs op until it succeeds or the request timeout has passed. An
// error from a cluster that lost a member (the leader's election, a
// connection the client has not moved off yet) passes within a second on
// a healthy majority, and should not fail the request. Retrying a swap is
// safe: one that did commit makes the retry a conflict, which the caller
// resolves by reading the entries again.
func (s *etcdStore) retry(ctx context.Context, op func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.requestTimeout)
	defer cancel()
	for {
		attempt, done := context.WithTimeout(ctx, s.requestTimeout/2)
		err := op(attempt)
		done()
		if err == nil || ctx.Err() != nil {
			return err
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return err
		}
	}
}

// Watch follows the key from the revision after the last one it saw and
// hands on every new state. A watch that fails (the member lost its
// leader, the revision was compacted) is started again after a fresh read.
func (s *etcdStore) Watch(ctx context.Context, changed func(State)) {
	var rev int64
	for ctx.Err() == nil {
		if st, err := s.Load(ctx); err == nil {
			rev = st.Revision
			changed(st)
		} else if !sleepCtx(ctx, time.Second) {
			return
		} else {
			continue
		}
		s.follow(ctx, rev, changed)
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// follow hands on the states of one watch from rev on until it ends.
func (s *etcdStore) follow(ctx context.Context, rev int64, changed func(State)) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for resp := range s.client.Watch(wctx, s.key, clientv3.WithRev(rev+1)) {
		if resp.Err() != nil {
			return
		}
		for _, ev := range resp.Events {
			if ev.Type == clientv3.EventTypeDelete {
				changed(State{Revision: ev.Kv.ModRevision})
				continue
			}
			if st, err := s.decode(ev.Kv.Value, ev.Kv.ModRevision); err == nil {
				changed(st)
			}
		}
	}
}

// Close closes the client.
func (s *etcdStore) Close() error { return s.client.Close() }

// Publish stores one replica's view under this replica's lease, granting
// a new lease when it has none or lost it, and refreshes the lease. The
// view is opaque here: its reader decodes it.
func (s *etcdStore) Publish(ctx context.Context, name string, view []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.requestTimeout)
	defer cancel()
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if s.lease != 0 {
		if _, err := s.client.KeepAliveOnce(ctx, s.lease); err != nil {
			s.lease = 0
		}
	}
	if s.lease == 0 {
		grant, err := s.client.Grant(ctx, int64(ReplicaTTL/time.Second))
		if err != nil {
			return fmt.Errorf("etcd: grant the replica lease: %w", err)
		}
		s.lease = grant.ID
	}
	if _, err := s.client.Put(ctx, s.replicasPrefix+name, string(view), clientv3.WithLease(s.lease)); err != nil {
		return fmt.Errorf("etcd: publish replica %s: %w", name, err)
	}
	return nil
}

// Withdraw removes this replica's view at once, for a clean shutdown.
func (s *etcdStore) Withdraw(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, s.requestTimeout)
	defer cancel()
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	if s.lease != 0 {
		s.client.Revoke(ctx, s.lease)
		s.lease = 0
	}
	_, err := s.client.Delete(ctx, s.replicasPrefix+name)
	return err
}

// Replicas reads the views of the live replicas, as published.
func (s *etcdStore) Replicas(ctx context.Context) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.requestTimeout)
	defer cancel()
	resp, err := s.client.Get(ctx, s.replicasPrefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("etcd: read the replicas: %w", err)
	}
	views := make([][]byte, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		views[i] = kv.Value
	}
	return views, nil
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
