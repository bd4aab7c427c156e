// Package httpclient is probegate's net/http stack: the clients that
// fan-out requests, and the probes whose http_client_config needs net/http's
// Transport (TransportOnly says which), go through, built from an
// http_client_config with prometheus/common's building blocks, one per
// distinct effective configuration and shared by every backend that uses
// it. The other HTTP probes own their connection (collector/probe) and
// still parse with net/http.
//
// There is no hand-written HTTP here. net/http validates response heads
// strictly and never reads an answer nobody asked for on a kept-alive
// connection, so a backend answering 503 cannot be judged by a stale 200;
// prometheus/common's round trippers layer TLS (with file reloading), basic
// auth, authorization, OAuth2, proxies and headers on top exactly as
// Prometheus does for its scrapes.
package httpclient

import (
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/probegate/probegate/config"
)

// Cache hands out one client per distinct http_client_config. Backends with
// equal configurations share a client, and with it one connection pool, so
// that a backend costs its connections and nothing more, and fan-out
// requests (and probes through the Transport) to the same backend reuse
// each other's connections.
//
// Configurations are compared by value, secrets included: a reload that
// changes only a password gets a new client, which sends the new password.
// (prometheus/common's String() hides secrets, so comparing what it prints
// would keep the old one.)
type Cache struct {
	conns *connTracker

	mu      sync.Mutex
	entries []*entry
}

type entry struct {
	config config.HTTPClientConfig
	client *http.Client
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return newCache(time.Now)
}

// newCache is NewCache on the clock now, which says how long connections
// have been idle.
func newCache(now func() time.Time) *Cache {
	return &Cache{conns: newConnTracker(now)}
}

// Client returns the client for cfg, building it on first use. A client
// never follows redirects: a probe classifies the redirect itself, and a
// fan-out relays what the backend said.
//
// A request that asks for its connection to be closed (http.Request.Close,
// a probe with keep_alive off) gets a new connection of its own, closed
// after the answer; it never takes a kept-alive one from the pool the
// other requests share, nor leaves one there.
func (c *Cache) Client(cfg config.HTTPClientConfig) (*http.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if reflect.DeepEqual(e.config, cfg) {
			return e.client, nil
		}
	}
	pooled, err := newRoundTripper(cfg, c.conns, true)
	if err != nil {
		return nil, fmt.Errorf("http_client_config: %w", err)
	}
	oneShot, err := newRoundTripper(cfg, c.conns, false)
	if err != nil {
		return nil, fmt.Errorf("http_client_config: %w", err)
	}
	client := &http.Client{
		Transport:     &splitTransport{pooled: pooled, oneShot: oneShot},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c.entries = append(c.entries, &entry{config: cfg, client: client})
	return client, nil
}

// Retain drops every client not in inUse and closes its idle connections.
// A request in flight on a dropped client finishes normally.
func (c *Cache) Retain(inUse []*http.Client) {
	keep := make(map[*http.Client]bool, len(inUse))
	for _, client := range inUse {
		keep[client] = true
	}
	c.mu.Lock()
	var dropped []*http.Client
	kept := c.entries[:0]
	for _, e := range c.entries {
		if keep[e.client] {
			kept = append(kept, e)
		} else {
			dropped = append(dropped, e.client)
		}
	}
	clear(c.entries[len(kept):])
	c.entries = kept
	c.mu.Unlock()
	for _, client := range dropped {
		client.CloseIdleConnections()
	}
}

// Len is the number of clients in the cache.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// CloseHost closes every connection dialled to addr (host:port), idle or
// busy, whichever client dialled it. A backend that is gone would otherwise
// keep its kept-alive connections until the idle timeout: with backends
// coming and going through discovery, that is memory and descriptors that
// grow with churn. A request in flight on such a connection fails, which is
// why only the connections of hosts no backend uses any more are closed.
func (c *Cache) CloseHost(addr string) {
	c.conns.closeAddr(addr)
}

// splitTransport sends the requests that want a connection of their own
// (Request.Close) through a transport without keep-alive, and every other
// through the pooled one. Both are built from the same configuration.
type splitTransport struct {
	pooled, oneShot http.RoundTripper
}

func (t *splitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Close {
		return t.oneShot.RoundTrip(req)
	}
	return t.pooled.RoundTrip(req)
}

// CloseIdleConnections closes the pooled transport's idle connections
// (the other keeps none), for http.Client.CloseIdleConnections.
func (t *splitTransport) CloseIdleConnections() {
	for _, rt := range []http.RoundTripper{t.pooled, t.oneShot} {
		if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}
