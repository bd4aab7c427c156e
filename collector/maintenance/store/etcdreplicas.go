package store

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Limits of the replica views read: a real view is a few hundred bytes,
// and a real deployment runs a handful of replicas. Anything beyond them
// was not written by a replica.
const (
	// MaxViews is how many replica views are read at most.
	MaxViews = 64
	// MaxViewBytes is the size of the largest view read.
	MaxViewBytes = 16 << 10
	// maxListedViews bounds the keys listed, without their values, to
	// find the views under a lease: a few hundred KiB at most.
	maxListedViews = 4096
)

// The reasons a stored replica view is ignored, the values of the label
// reason of probegate_replica_views_ignored_total.
const (
	// IgnoredNoLease: the view is not attached to a live lease, so
	// nothing says its replica is alive (written by hand, say).
	IgnoredNoLease = "no_lease"
	// IgnoredNameMismatch: the name in the view is not its key's.
	IgnoredNameMismatch = "name_mismatch"
	// IgnoredTooLarge: the view is larger than MaxViewBytes.
	IgnoredTooLarge = "too_large"
	// IgnoredTooMany: the view is beyond the first MaxViews.
	IgnoredTooMany = "too_many"
	// IgnoredMalformed: the view is not a replica view.
	IgnoredMalformed = "malformed"
)

// StoredView is one replica view as the store holds it.
type StoredView struct {
	// Name is its key's last segment: the name the replica published
	// it under.
	Name string
	// Value is the view as published; nil when it is ignored.
	Value []byte
	// Ignored is why the view does not count, empty when it may.
	Ignored string
}

// Replicas reads the replica views: at most MaxViews, a view counted only
// while it is attached to a lease (the lease is the replica's liveness,
// measured by etcd: etcd refuses a put under a lease it does not hold and
// deletes a lease's keys when the lease ends, so a key with a lease is
// under a live one, and no list of the cluster's leases is needed, which
// would also race with a replica granting itself a new one), and only
// when it is at most MaxViewBytes.
//
// The keys are listed first, without their values (at most
// maxListedViews of them), so that a view that does not count costs no
// transfer, and the limit of MaxViews applies to the leased keys only: a
// pile of leaseless keys that sort first must not push the real views
// out. Up to MaxViews leaseless keys are named as no_lease; too_many
// counts every other key left out: leased ones beyond MaxViews, leaseless
// ones beyond MaxViews, and those beyond the listing.
func (s *etcdStore) Replicas(ctx context.Context) (views []StoredView, tooMany int, err error) {
	ctx, cancel := context.WithTimeout(ctx, s.requestTimeout)
	defer cancel()
	client, err := s.conn.get(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("etcd: read the replicas: %w", err)
	}
	keys, err := client.Get(ctx, s.keys.replicas, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(maxListedViews))
	if err != nil {
		return nil, 0, fmt.Errorf("etcd: read the replicas: %w", err)
	}
	tooMany = max(0, int(keys.Count)-len(keys.Kvs))
	var gets []clientv3.Op
	leaseless := 0
	for _, kv := range keys.Kvs {
		v := StoredView{Name: s.keys.replicaName(kv.Key)}
		switch {
		case kv.Lease == 0 && leaseless < MaxViews:
			leaseless++
			v.Ignored = IgnoredNoLease
		case kv.Lease == 0 || len(gets) == MaxViews:
			tooMany++
			continue
		default:
			gets = append(gets, clientv3.OpGet(string(kv.Key)))
		}
		views = append(views, v)
	}
	if len(gets) > 0 {
		resp, err := client.Txn(ctx).Then(gets...).Commit()
		if err != nil {
			return nil, 0, fmt.Errorf("etcd: read the replicas: %w", err)
		}
		fetched := map[string][]byte{}
		for _, r := range resp.Responses {
			for _, kv := range r.GetResponseRange().Kvs {
				if kv.Lease != 0 {
					fetched[s.keys.replicaName(kv.Key)] = kv.Value
				}
			}
		}
		for i := range views {
			if views[i].Ignored != "" {
				continue
			}
			switch value, ok := fetched[views[i].Name]; {
			case !ok:
				views[i].Ignored = IgnoredNoLease
			case len(value) > MaxViewBytes:
				views[i].Ignored = IgnoredTooLarge
			default:
				views[i].Value = value
			}
		}
	}
	return views, tooMany, nil
}
