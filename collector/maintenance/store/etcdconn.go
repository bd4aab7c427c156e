package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Backoff of the connection attempts to an etcd cluster that cannot be
// reached.
const (
	minConnectRetry = 100 * time.Millisecond
	maxConnectRetry = 5 * time.Second
)

// etcdConn is an etcd client that connects in the background. The etcd
// client authenticates while it connects when it has a username, and
// then fails when the cluster cannot be reached; a replica must start and
// serve all the same, so the connection is retried until it succeeds,
// and an operation waits for it no longer than its own deadline.
type etcdConn struct {
	connected chan struct{} // closed once client is set
	stop      context.CancelFunc
	done      chan struct{} // closed when the connecting goroutine ends

	mu      sync.Mutex
	client  *clientv3.Client
	lastErr error
}

// dialEtcd starts connecting with cfg.
func dialEtcd(cfg clientv3.Config) *etcdConn {
	ctx, stop := context.WithCancel(context.Background())
	c := &etcdConn{connected: make(chan struct{}), stop: stop, done: make(chan struct{})}
	go c.connect(ctx, cfg)
	return c
}

func (c *etcdConn) connect(ctx context.Context, cfg clientv3.Config) {
	defer close(c.done)
	cfg.Context = ctx
	delay := minConnectRetry
	for {
		client, err := clientv3.New(cfg)
		if err == nil {
			c.mu.Lock()
			c.client = client
			c.mu.Unlock()
			close(c.connected)
			return
		}
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		if !sleepCtx(ctx, delay) {
			return
		}
		delay = min(2*delay, maxConnectRetry)
	}
}

// errNotConnected is the error of an operation that found no connection
// to etcd before its deadline.
var errNotConnected = errors.New("not connected to etcd yet")

// get returns the client once connected, waiting until ctx ends at most.
func (c *etcdConn) get(ctx context.Context) (*clientv3.Client, error) {
	// A client already connected is returned whatever ctx: the operation
	// then fails on ctx itself, as it would a moment later.
	select {
	case <-c.connected:
		return c.client, nil
	default:
	}
	select {
	case <-c.connected:
		return c.client, nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastErr != nil {
		return nil, fmt.Errorf("%w: %v", errNotConnected, c.lastErr)
	}
	return nil, errNotConnected
}

// close stops connecting and closes the client.
func (c *etcdConn) close() error {
	c.stop()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client != nil {
		return c.client.Close()
	}
	return nil
}
