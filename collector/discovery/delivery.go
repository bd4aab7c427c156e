package discovery

import (
	"context"
	"sync"

	sd "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/discovery/targetgroup"
)

// The discovery manager sends every target set it serves at each update,
// as an empty list when its discoverer has sent nothing yet: at the
// first update after a reload, a new set (a block the reload changed) is
// empty whether or not its discoverer has looked. deliveries tells the
// two apart: each block's discoverer is wrapped, and its set counts as
// delivered from its discoverer's first send on.

// deliveries records which target sets' discoverers have sent their
// first targets since they started.
type deliveries struct {
	mu   sync.Mutex
	sent map[string]bool
}

// started records that the discoverer of set started and has not sent.
func (d *deliveries) started(set string) { d.record(set, false) }

// delivered records that the discoverer of set sent.
func (d *deliveries) delivered(set string) { d.record(set, true) }

func (d *deliveries) record(set string, sent bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sent == nil {
		d.sent = map[string]bool{}
	}
	d.sent[set] = sent
}

// hasDelivered reports whether the discoverer of set has sent since it
// started.
func (d *deliveries) hasDelivered(set string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sent[set]
}

// forget drops the sets keep does not report.
func (d *deliveries) forget(keep func(set string) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for set := range d.sent {
		if !keep(set) {
			delete(d.sent, set)
		}
	}
}

// deliveringConfig is a block's discovery configuration whose discoverer
// records its first send in deliveries. Two blocks of equal content have
// equal set names and share one discoverer, as the manager compares
// configurations deeply (the deliveries pointer is the same for all).
type deliveringConfig struct {
	sd.Config
	set        string
	deliveries *deliveries
}

func (c deliveringConfig) NewDiscoverer(o sd.DiscovererOptions) (sd.Discoverer, error) {
	inner, err := c.Config.NewDiscoverer(o)
	if err != nil {
		return nil, err
	}
	c.deliveries.started(c.set)
	return &deliveringDiscoverer{inner: inner, set: c.set, deliveries: c.deliveries}, nil
}

// deliveringDiscoverer forwards its discoverer's sends and records the
// first.
type deliveringDiscoverer struct {
	inner      sd.Discoverer
	set        string
	deliveries *deliveries
}

func (d *deliveringDiscoverer) Run(ctx context.Context, up chan<- []*targetgroup.Group) {
	ch := make(chan []*targetgroup.Group)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.inner.Run(ctx, ch)
	}()
	defer func() { <-done }()
	for {
		select {
		case <-done:
			return
		case groups := <-ch:
			select {
			case up <- groups:
				// The manager received the groups and stores them
				// at once (no I/O between): the updates from here on
				// carry them. An update assembled in that instant
				// would count an empty set as delivered, which costs
				// what the wrapper saves, once.
				d.deliveries.delivered(d.set)
			case <-ctx.Done():
				return
			}
		}
	}
}
