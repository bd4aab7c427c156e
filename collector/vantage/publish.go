package vantage

import (
	"context"
	"errors"
	"time"

	"github.com/go-kit/log/level"

	"github.com/probegate/probegate/collector/fleet"
	"github.com/probegate/probegate/collector/maintenance/store"
	"github.com/probegate/probegate/collector/pool"
)

// publish writes, when the pace allows (fleet.NextWrite), the own
// verdicts that changed and the deletions due, as one write: what does
// not fit in it waits for the next. Each backend's latest verdict is
// written once however often it changed meanwhile. In local mode there is
// no own verdict to write, only the deletions of those written before.
func (c *Coordinator) publish(ctx context.Context, now time.Time) {
	c.state.Lock()
	defer c.state.Unlock()
	if lease := c.o.Store.ViewLease(); lease != 0 && lease != c.lease {
		// The view moved to a new lease, which happens without a write
		// of ours: every verdict under the old one ends with it.
		c.republish(c.lease != 0)
		c.lease = lease
	}
	c.mu.Lock()
	pending := len(c.pending)
	c.mu.Unlock()
	dueDrops := 0
	for _, at := range c.drops {
		if !now.Before(at) {
			dueDrops++
		}
	}
	at, ok := fleet.NextWrite(pending+dueDrops, c.lastWrite, c.lastBytes, now)
	if !ok || at.After(now) {
		return
	}
	ops, backends := c.operations(now)
	if len(ops) == 0 {
		return
	}
	writes, err := fleet.Split(ops, fleet.WriteLimits())
	if err != nil {
		// A verdict encodes in about a hundred bytes and a name is
		// bounded by the configuration: this is a bug, not a state.
		level.Error(c.o.Logger).Log("msg", "Cannot publish the verdicts", "err", err)
		return
	}
	write := writes[0]
	c.requeue(ops[len(write):], backends[len(write):])
	c.state.Unlock()
	lease, err := c.o.Store.PublishVerdicts(ctx, write)
	c.state.Lock()
	if err != nil {
		c.requeue(write, backends[:len(write)])
		c.metrics.writes.WithLabelValues("error").Inc()
		if !errors.Is(err, store.ErrNoViewLease) {
			level.Debug(c.o.Logger).Log("msg", "Cannot publish the verdicts", "err", err)
		}
		return
	}
	size := 0
	for _, op := range write {
		size += op.Size()
	}
	c.lastWrite, c.lastBytes = now, size
	c.metrics.writes.WithLabelValues("ok").Inc()
	c.metrics.bytes.Add(float64(size))
	if lease != c.lease {
		// Every key under the lease before is gone, or going with it:
		// everything this replica vouches for is written again.
		c.republish(c.lease != 0)
		c.lease = lease
	}
	for i, op := range write {
		if op.Delete {
			delete(c.written, backends[i])
			delete(c.drops, backends[i])
		} else {
			c.written[backends[i]] = true
		}
	}
}

// operations takes the pending verdicts and the deletions due at now,
// and returns their operations and, index for index, their backends.
func (c *Coordinator) operations(now time.Time) ([]fleet.Op, []string) {
	c.mu.Lock()
	names := make([]string, 0, len(c.pending))
	for name := range c.pending {
		names = append(names, name)
	}
	clear(c.pending)
	c.mu.Unlock()
	ops := make([]fleet.Op, 0, len(names))
	backends := make([]string, 0, len(names))
	for _, name := range names {
		b := c.o.Pool.ByName(name)
		if b == nil {
			continue
		}
		v, ok := b.OwnVerdict()
		if !ok {
			continue
		}
		data, err := fleet.Encode(v)
		if err != nil {
			level.Error(c.o.Logger).Log("msg", "Cannot encode a verdict", "backend", name, "err", err)
			continue
		}
		ops = append(ops, fleet.Op{Key: c.o.Store.VerdictKey(c.o.Self, name), Value: data})
		backends = append(backends, name)
	}
	for name, at := range c.drops {
		if !now.Before(at) && c.roles[name].role != pool.RoleVantage {
			ops = append(ops, fleet.Op{Key: c.o.Store.VerdictKey(c.o.Self, name), Delete: true})
			backends = append(backends, name)
		}
	}
	return ops, backends
}

// requeue puts operations that were not written back: verdicts among the
// pending, deletions among the drops, which still hold them.
func (c *Coordinator) requeue(ops []fleet.Op, backends []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, op := range ops {
		if !op.Delete {
			c.pending[backends[i]] = struct{}{}
		}
	}
}

// republish queues every backend this replica is a vantage point of, its
// lease having changed; lost says that the keys under the lease before
// are gone, so nothing written is left to delete.
func (c *Coordinator) republish(lost bool) {
	if lost {
		clear(c.written)
		clear(c.drops)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, a := range c.roles {
		if a.role == pool.RoleVantage {
			c.pending[name] = struct{}{}
		}
	}
}
