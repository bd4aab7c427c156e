// Package membudget bounds the memory of the bodies a fan-out round reads:
// every buffer a round reads into is taken from one Budget shared by all
// rounds in flight, fanout.max_buffered_bytes, and grows only with the
// bytes that arrive. A declared Content-Length sizes nothing beyond a
// small start: a backend that declares 60 MB and stalls costs what it
// sent.
//
// The budget counts buffer capacity, not bytes read, since capacity is
// what the process holds: a buffer grown by doubling to 33 MB for 17 MB
// of answer holds 33 MB.
package membudget

import (
	"errors"
	"io"
	"sync/atomic"
)

// startBytes is the capacity an answer's buffer starts with, less
// when the answer declares itself shorter.
const startBytes = 4 << 10

// ErrBudget is a body that would take the buffers of all rounds in
// flight past fanout.max_buffered_bytes. It is probegate's limit, not
// the backend's fault.
var ErrBudget error = budgetError{}

// budgetError is ErrBudget's type. Its LocalFault method is how every
// caller that judges a failure (a fan-out answer, a probe) knows it as
// probegate's own without knowing this package.
type budgetError struct{}

func (budgetError) Error() string { return "the answers in flight fill fanout.max_buffered_bytes" }

// LocalFault names the resource probegate ran out of.
func (budgetError) LocalFault() string { return "memory budget (fanout.max_buffered_bytes)" }

// ErrTooLarge is a body longer than the limit Read was given, which for
// a backend's answer is fanout.max_response_bytes.
var ErrTooLarge = errors.New("response body exceeds fanout.max_response_bytes")

// Budget is how many bytes of buffers the rounds in flight hold. The zero
// value holds none; it is safe for concurrent use.
type Budget struct {
	used atomic.Int64
}

// Used is how many bytes the rounds in flight hold.
func (b *Budget) Used() int64 { return b.used.Load() }

// Round is a round's share of the budget, for the rounds in flight
// together to hold at most limit bytes (0 or less: no limit, the round
// only counts). Release it once the round's answer is written.
func (b *Budget) Round(limit int64) *Round {
	return &Round{budget: b, limit: limit}
}

// Round is one round's share of a Budget. Its backends read concurrently.
type Round struct {
	budget *Budget
	// limit is the round's fanout.max_buffered_bytes; 0 or less is none.
	limit int64
	held  atomic.Int64
}

// grow takes n bytes for the round, or reports false when that would
// pass the limit.
func (r *Round) grow(n int64) bool {
	for {
		used := r.budget.used.Load()
		if r.limit > 0 && used+n > r.limit {
			return false
		}
		if r.budget.used.CompareAndSwap(used, used+n) {
			r.held.Add(n)
			return true
		}
	}
}

// shrink gives back n bytes of a buffer the round dropped.
func (r *Round) shrink(n int64) {
	r.held.Add(-n)
	r.budget.used.Add(-n)
}

// Release gives back everything the round holds, once its answer is
// written.
func (r *Round) Release() {
	r.budget.used.Add(-r.held.Swap(0))
}

// Read reads a body of at most limit bytes (0: no limit), whose declared
// length is contentLength (-1 when unknown), into a buffer taken from the
// round's budget, which the round holds until Release. It stops reading
// at the limit, so a backend streaming without end costs limit bytes of
// memory, not what it sends; a buffer it gives up on (an error, too
// large) goes back to the budget.
func (r *Round) Read(body io.Reader, contentLength, limit int64) ([]byte, error) {
	if limit > 0 && contentLength > limit {
		return nil, ErrTooLarge
	}
	if limit > 0 {
		body = io.LimitReader(body, limit+1)
	}
	size := int64(startBytes)
	if contentLength >= 0 {
		// Room for the final read that sees the end of the body.
		size = min(size, contentLength+1)
	}
	if !r.grow(size) {
		return nil, ErrBudget
	}
	buf := make([]byte, 0, size)
	fail := func(err error) ([]byte, error) {
		r.shrink(int64(cap(buf)))
		return nil, err
	}
	for {
		if len(buf) == cap(buf) {
			next := int64(2 * cap(buf))
			if limit > 0 {
				next = min(next, limit+1)
			}
			if !r.grow(next) {
				return fail(ErrBudget)
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			r.shrink(int64(cap(buf)))
			buf = grown
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if limit > 0 && int64(len(buf)) > limit {
			return fail(ErrTooLarge)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return fail(err)
		}
	}
}
