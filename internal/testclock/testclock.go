// Package testclock is a clock a test moves by hand, for the code that
// takes its clock as a parameter (now func() time.Time) so that timing is
// tested without sleeping. It is safe for concurrent use: the code under
// test reads it from its own goroutines while the test moves it.
package testclock

import (
	"sync/atomic"
	"time"
)

// Clock is a hand-moved clock. The zero Clock reads the Unix epoch.
type Clock struct{ nanos atomic.Int64 }

// New returns a clock that reads start until moved.
func New(start time.Time) *Clock {
	c := &Clock{}
	c.Set(start)
	return c
}

// Now is the clock's time, in UTC; pass it where code wants a clock.
func (c *Clock) Now() time.Time { return time.Unix(0, c.nanos.Load()).UTC() }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.nanos.Store(t.UnixNano()) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.nanos.Add(int64(d)) }
