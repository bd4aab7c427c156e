package gate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/go-kit/log/level"
)

// OnShutdown registers fn to run once the server has shut down, after the
// drain window and the graceful Shutdown: stopping background work such as
// a prober. Callbacks run one after another in reverse order of
// registration, like deferred calls, behind recover, sharing a context
// that ends after the shutdown timeout.
func (g *Gate) OnShutdown(fn func(ctx context.Context)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cleanups = append(g.cleanups, fn)
}

// Run serves srv by calling serve (srv.ListenAndServe, or any function
// that serves srv, such as exporter-toolkit's web.ListenAndServe) and runs
// the drain lifecycle around it. Run wraps srv.Handler with Wrap first.
//
// On the first SIGTERM or SIGINT (or when ctx ends) /ready fails with
// "draining":true and keep-alive is switched off in the same step; the
// server goes on serving everything normally for the drain window; a
// second signal ends the window early. Only after the window is the
// default signal disposition restored, so a further signal kills a hung
// shutdown or cleanup. Then srv.Shutdown, bounded by the shutdown timeout
// (the connections still open after it are closed), then the OnShutdown
// callbacks, then Run returns nil.
//
// When serve fails on its own (a port already in use), Run runs the
// callbacks and returns its error. Run is meant to be called once.
func (g *Gate) Run(ctx context.Context, srv *http.Server, serve func() error) error {
	triggers, release := g.listen()
	defer release()
	if srv.Handler == nil {
		srv.Handler = http.DefaultServeMux
	}
	srv.Handler = g.Wrap(srv.Handler)
	served := make(chan error, 1)
	go func() { served <- serve() }()

	select {
	case err := <-served:
		release()
		g.cleanUp()
		return serveError(err)
	case sig := <-triggers:
		g.beginDrain("signal", sig.String())
	case <-ctx.Done():
		g.beginDrain("cause", context.Cause(ctx).Error())
	}
	err, stopped := g.awaitWindow(triggers, served)
	release()
	g.shutdown(srv)
	if !stopped {
		err = <-served
	}
	g.cleanUp()
	return serveError(err)
}

// serveError is what Run reports for serve's result: a server closed by
// Shutdown or Close is a normal end.
func serveError(err error) error {
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serve: %w", err)
}

// listen returns the channel of drain triggers and the function that gives
// the signals their default disposition back.
func (g *Gate) listen() (<-chan os.Signal, func()) {
	if g.signals != nil {
		return g.signals, func() {}
	}
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, os.Interrupt)
	return ch, sync.OnceFunc(func() { signal.Stop(ch) })
}

// beginDrain fails /ready and switches keep-alive off: both read the one
// flag, so they change in a single step.
func (g *Gate) beginDrain(keyvals ...any) {
	g.draining.Store(true)
	level.Info(g.logger).Log(append([]any{"msg", "Drain started: /ready fails, keep-alive is off, serving on for the drain window", "drain", g.timings.Load().drain}, keyvals...)...)
}

// awaitWindow serves on for the drain window, which a second trigger ends
// early. It reports serve's error and true when the server stopped on its
// own meanwhile.
func (g *Gate) awaitWindow(triggers <-chan os.Signal, served <-chan error) (error, bool) {
	drain := g.timings.Load().drain
	if drain <= 0 {
		return nil, false
	}
	timer := time.NewTimer(drain)
	defer timer.Stop()
	select {
	case <-timer.C:
		level.Info(g.logger).Log("msg", "Drain window over, shutting down")
	case sig := <-triggers:
		level.Info(g.logger).Log("msg", "Second signal ends the drain window early, shutting down", "signal", sig.String())
	case err := <-served:
		level.Warn(g.logger).Log("msg", "Server stopped during the drain window", "err", err)
		return err, true
	}
	return nil, false
}

// shutdown stops srv gracefully within the shutdown timeout, then closes
// whatever is left.
func (g *Gate) shutdown(srv *http.Server) {
	timeout := g.timings.Load().shutdownTimeout
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		level.Warn(g.logger).Log("msg", "Graceful shutdown did not finish in time, closing the remaining connections", "shutdown_timeout", timeout, "err", err)
		srv.Close()
	}
}

// cleanUp runs the OnShutdown callbacks, last registered first.
func (g *Gate) cleanUp() {
	g.mu.Lock()
	fns := slices.Clone(g.cleanups)
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), g.timings.Load().shutdownTimeout)
	defer cancel()
	for _, fn := range slices.Backward(fns) {
		g.runCleanup(ctx, fn)
	}
	level.Info(g.logger).Log("msg", "Shutdown complete")
}

// runCleanup runs one callback; a panic is logged and the next one runs.
func (g *Gate) runCleanup(ctx context.Context, fn func(context.Context)) {
	defer func() {
		if p := recover(); p != nil {
			level.Error(g.logger).Log("msg", "Shutdown callback panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	fn(ctx)
}
