package httpprobe

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// deadlineContext is a context with a deadline that costs no timer unless
// someone asks for its Done channel. The transport never does: the
// connection's deadline enforces the context's, and cancellation is
// watched on the parent. context.WithDeadline, by contrast, arms a timer,
// makes a channel and registers with its parent on every probe, which at
// thousands of probes a second is a good share of their CPU.
type deadlineContext struct {
	parent   context.Context
	deadline time.Time
	released atomic.Bool

	mu sync.Mutex
	// full is the real context.WithDeadline, made on first use of Done.
	full   atomic.Pointer[context.Context]
	cancel context.CancelFunc
}

// WithDeadline returns a context that ends at deadline or when parent
// does, like context.WithDeadline, and the function that releases it.
// It behaves as a full context; it is only cheaper while nobody but this
// package's Transport uses it.
func WithDeadline(parent context.Context, deadline time.Time) (context.Context, func()) {
	c := &deadlineContext{parent: parent, deadline: deadline}
	return c, c.release
}

// Deadline implements context.Context.
func (c *deadlineContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context. The first call builds the real context
// with its timer.
func (c *deadlineContext) Done() <-chan struct{} { return c.materialise().Done() }

// Err implements context.Context. Without a real context it is computed
// from the release, the parent and the clock, as the real one would be.
func (c *deadlineContext) Err() error {
	if full := c.full.Load(); full != nil {
		return (*full).Err()
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	if c.released.Load() {
		return context.Canceled
	}
	return nil
}

// Value implements context.Context.
func (c *deadlineContext) Value(key any) any { return c.parent.Value(key) }

func (c *deadlineContext) materialise() context.Context {
	if full := c.full.Load(); full != nil {
		return *full
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if full := c.full.Load(); full != nil {
		return *full
	}
	full, cancel := context.WithDeadline(c.parent, c.deadline)
	c.cancel = cancel
	if c.released.Load() {
		cancel()
	}
	c.full.Store(&full)
	return full
}

func (c *deadlineContext) release() {
	c.mu.Lock()
	c.released.Store(true)
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// watchedContext is the context whose cancellation a request on ctx must
// watch besides the deadline: the parent of a deadlineContext, else ctx.
func watchedContext(ctx context.Context) context.Context {
	if c, ok := ctx.(*deadlineContext); ok {
		return c.parent
	}
	return ctx
}
