package fanout

import (
	"errors"
	"io"
	"sync/atomic"
)

// This file bounds the memory of the answers being read: every buffer a
// round reads into is taken from one budget shared by all rounds in
// flight, fanout.max_buffered_bytes, and grows only with the bytes that
// arrive. A declared Content-Length sizes nothing beyond a small start:
// a backend that declares 60 MB and stalls costs what it sent.
//
// The budget counts buffer capacity, not bytes read, since capacity is
// what the process holds: a buffer grown by doubling to 33 MB for 17 MB
// of answer holds 33 MB.

// startBufferBytes is the capacity an answer's buffer starts with, less
// when the answer declares itself shorter.
const startBufferBytes = 4 << 10

// errBufferBudget is an answer that would take the buffers of all rounds
// in flight past fanout.max_buffered_bytes. It is probegate's limit, not
// the backend's fault.
var errBufferBudget = errors.New("the answers in flight fill fanout.max_buffered_bytes")

// bufferBudget is how many bytes of buffers the rounds in flight hold.
type bufferBudget struct {
	used atomic.Int64
}

// roundBuffers is one round's share of the budget.
type roundBuffers struct {
	budget *bufferBudget
	// limit is the round's fanout.max_buffered_bytes; 0 or less is none.
	limit int64
	held  atomic.Int64
}

// grow takes n bytes for the round, or reports false when that would
// pass the limit.
func (r *roundBuffers) grow(n int64) bool {
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
func (r *roundBuffers) shrink(n int64) {
	r.held.Add(-n)
	r.budget.used.Add(-n)
}

// release gives back everything the round holds, once its answer is
// written.
func (r *roundBuffers) release() {
	r.budget.used.Add(-r.held.Swap(0))
}

// readLimited reads a body of at most limit bytes (0: no limit), whose
// declared length is contentLength (-1 when unknown), into a buffer taken
// from the round's budget. It stops reading at the limit, so a backend
// streaming without end costs limit bytes of memory, not what it sends;
// a buffer it gives up on (an error, too large) goes back to the budget.
func readLimited(body io.Reader, contentLength, limit int64, mem *roundBuffers) ([]byte, error) {
	if limit > 0 && contentLength > limit {
		return nil, errResponseTooLarge
	}
	if limit > 0 {
		body = io.LimitReader(body, limit+1)
	}
	size := int64(startBufferBytes)
	if contentLength >= 0 {
		// Room for the final read that sees the end of the body.
		size = min(size, contentLength+1)
	}
	if !mem.grow(size) {
		return nil, errBufferBudget
	}
	buf := make([]byte, 0, size)
	fail := func(err error) ([]byte, error) {
		mem.shrink(int64(cap(buf)))
		return nil, err
	}
	for {
		if len(buf) == cap(buf) {
			next := int64(2 * cap(buf))
			if limit > 0 {
				next = min(next, limit+1)
			}
			if !mem.grow(next) {
				return fail(errBufferBudget)
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			mem.shrink(int64(cap(buf)))
			buf = grown
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if limit > 0 && int64(len(buf)) > limit {
			return fail(errResponseTooLarge)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return fail(err)
		}
	}
}
