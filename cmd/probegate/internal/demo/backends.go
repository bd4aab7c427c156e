package demo

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/probegate/probegate/config"
)

// queryPath is the path every demo backend that is alive answers with
// a JSON array, so `/fanout/api/items` shows a merged, partial round.
const queryPath = "/api/items"

// backend is one built-in loopback backend of the demo.
type backend struct {
	name string
	// what the tour says about it
	story string
	// health answers the probe path; nil means the backend is dead
	// (every connection reset).
	health func() int
	// query answers queryPath with this status (200 sends a JSON array).
	query int
	// tls serves HTTPS with a certificate of the demo's own.
	tls bool
}

// tourBackends are the demo's own backends, one for each state the tour
// shows.
func tourBackends() []backend {
	var flips atomic.Uint64
	return []backend{
		{name: "healthy", story: "answers 200 over TLS: healthy (its certificate's expiry is exported)", health: func() int { return http.StatusOK }, query: http.StatusOK, tls: true},
		{name: "dead", story: "resets every connection: unhealthy and unreachable after 3 probes"},
		{name: "wrong-path", story: "probe path answers 404 but it serves queries: probe_unsupported, in service", health: func() int { return http.StatusNotFound }, query: http.StatusOK},
		{name: "flapping-proxy", story: "a proxy flipping 404/503 in front of a dead backend: unhealthy (503 verifies, then every non-ok counts)", health: func() int {
			if flips.Add(1)%2 == 0 {
				return http.StatusServiceUnavailable
			}
			return http.StatusNotFound
		}, query: http.StatusServiceUnavailable},
		{name: "overloaded", story: "answers 429: a real failure, unhealthy after 3 probes", health: func() int { return http.StatusTooManyRequests }, query: http.StatusTooManyRequests},
	}
}

// handler serves the probe path and the query path of a live demo backend.
func (d backend) handler(probePath string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(probePath, func(w http.ResponseWriter, _ *http.Request) {
		code := d.health()
		w.WriteHeader(code)
		fmt.Fprintln(w, http.StatusText(code))
	})
	mux.HandleFunc(queryPath, func(w http.ResponseWriter, _ *http.Request) {
		if d.query != http.StatusOK {
			http.Error(w, http.StatusText(d.query), d.query)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `[{"backend":%q,"item":1},{"backend":%q,"item":2}]`+"\n", d.name, d.name)
	})
	return mux
}

// startBackends starts the live demo backends on loopback ports and holds
// one that resets every connection for the dead one. stop shuts them down.
func startBackends(probePath string) (backends []config.Backend, stories map[string]string, stop func(), err error) {
	var servers []*http.Server
	var releases []func() error
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, s := range servers {
			s.Shutdown(ctx)
		}
		for _, release := range releases {
			release()
		}
	}
	stories = map[string]string{}
	for _, d := range tourBackends() {
		url, client, err := d.start(probePath, &servers, &releases)
		if err != nil {
			stop()
			return nil, nil, nil, fmt.Errorf("demo backend %s: %w", d.name, err)
		}
		backends = append(backends, config.Backend{Name: d.name, URL: url, HTTPClientConfig: client})
		stories[d.name] = d.story
	}
	return backends, stories, stop, nil
}

// start serves a live backend on a loopback port, or holds a port that
// resets every connection for a dead one, and returns its URL and, for a TLS
// backend, the client configuration that trusts it.
func (d backend) start(probePath string, servers *[]*http.Server, releases *[]func() error) (string, *config.HTTPClientConfig, error) {
	if d.health == nil {
		url, release, err := listenDead()
		if err != nil {
			return "", nil, err
		}
		*releases = append(*releases, release)
		return url, nil, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: d.handler(probePath), ReadHeaderTimeout: 5 * time.Second}
	*servers = append(*servers, srv)
	if !d.tls {
		go srv.Serve(ln)
		return "http://" + ln.Addr().String(), nil, nil
	}
	cert, client, err := certificate()
	if err != nil {
		ln.Close()
		return "", nil, err
	}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	go srv.ServeTLS(ln, "", "")
	return "https://" + ln.Addr().String(), client, nil
}
