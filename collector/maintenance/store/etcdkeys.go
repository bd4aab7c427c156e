package store

import (
	"bytes"
	"maps"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdKeys are the keys of one pool under its prefix:
//
//   - <prefix>/maintenance, the entries document: every entry, with the
//     id of the lease an entry with a ttl is bound to (leasedEntry). It has no lease,
//     so that deleting it by hand is the one way to lose it.
//   - <prefix>/leases/<backend>, one key per entry with a ttl, put under
//     that entry's lease: etcd deletes it when the lease expires, on its
//     leader's clock, and every replica's watch sees the entry end.
//   - <prefix>/replicas/<name>, each replica's view, under the lease of
//     that replica.
//   - <prefix>/verdicts/<replica>/<backend>, the verdict a replica
//     publishes of a backend it probes, under the lease of that
//     replica's view, so that the verdicts of a replica that is gone go
//     with its view.
type etcdKeys struct {
	entries, leases, replicas, verdicts string
}

func newEtcdKeys(prefix string) etcdKeys {
	return etcdKeys{entries: prefix + "/maintenance", leases: prefix + "/leases/", replicas: prefix + "/replicas/",
		verdicts: prefix + "/verdicts/"}
}

func (k etcdKeys) lease(backend string) string   { return k.leases + backend }
func (k etcdKeys) replica(name string) string    { return k.replicas + name }
func (k etcdKeys) watched() (from, to string)    { return k.leases, k.entries + "\x00" }
func (k etcdKeys) replicaName(key []byte) string { return strings.TrimPrefix(string(key), k.replicas) }
func (k etcdKeys) verdict(replica, backend string) string {
	return k.verdicts + replica + "/" + backend
}

// verdictOf parses a verdict key into its replica and its backend, both
// non-empty. A backend name has no '/' (the configuration refuses one), a
// replica name may: the backend is what follows the last '/'.
func (k etcdKeys) verdictOf(key []byte) (replica, backend string, ok bool) {
	rest, ok := strings.CutPrefix(string(key), k.verdicts)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// etcdSnapshot is what the entries depend on at one revision: the
// entries document as stored and the lease keys with their leases.
type etcdSnapshot struct {
	keys etcdKeys
	// read is the revision of the read the snapshot started from, and
	// revision the one of the last change folded into it.
	read, revision int64
	// document is the stored entries document, nil when the key is
	// absent; token is its ModRevision, 0 when absent.
	document []byte
	token    int64
	// leases maps a backend to the lease its lease key is attached to.
	leases map[string]int64
}

// state decodes the document and keeps the entries in force by the lease
// keys. A document that cannot be decoded is a *CorruptError; the state
// then carries the revision, the token and every lease key, which still
// decide removals (EndedByLeases).
func (s etcdSnapshot) state() (State, error) {
	st := State{Revision: s.revision, Token: s.token}
	if s.document == nil {
		return st, nil
	}
	all, err := decodeDocument(s.document, leasedBackendOf)
	if err != nil {
		st.leases = maps.Clone(s.leases)
		if st.leases == nil {
			st.leases = map[string]int64{}
		}
		return st, &CorruptError{Key: s.keys.entries, Revision: s.token, Err: err}
	}
	st.Entries, st.leases = inForceBy(all, s.leases)
	return st, nil
}

// fold applies the events of one watch response, and reports whether
// any of them concerned the entries.
func (s *etcdSnapshot) fold(events []*clientv3.Event) bool {
	changed := false
	for _, ev := range events {
		kv := ev.Kv
		if kv.ModRevision <= s.read {
			// Already in the read the snapshot started from: history
			// is never applied over a newer state.
			continue
		}
		s.revision = max(s.revision, kv.ModRevision)
		deleted := ev.Type == mvccpb.DELETE
		switch key := string(kv.Key); {
		case key == s.keys.entries:
			changed = true
			if deleted {
				s.document, s.token = nil, 0
			} else {
				s.document, s.token = bytes.Clone(kv.Value), kv.ModRevision
			}
		case strings.HasPrefix(key, s.keys.leases):
			changed = true
			if deleted {
				delete(s.leases, strings.TrimPrefix(key, s.keys.leases))
			} else {
				s.leases[strings.TrimPrefix(key, s.keys.leases)] = kv.Lease
			}
		}
	}
	return changed
}
