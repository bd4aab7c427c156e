package membudget

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/probegate/probegate/collector/health"
)

// stallingReader yields its data, then fails as a stalled backend's body
// does when the round times out; it remembers the largest read asked of
// it.
type stallingReader struct {
	data    []byte
	largest int
}

func (r *stallingReader) Read(p []byte) (int, error) {
	r.largest = max(r.largest, len(p))
	if len(r.data) == 0 {
		return 0, errors.New("timeout awaiting the rest of the body")
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestBufferIsNotSizedFromContentLength: a backend that declares 60 MB
// and sends 100 bytes costs a small buffer, given back when it stalls.
func TestBufferIsNotSizedFromContentLength(t *testing.T) {
	mem := new(Budget).Round(1 << 30)
	body := &stallingReader{data: bytes.Repeat([]byte("x"), 100)}
	if _, err := mem.Read(body, 60<<20, 64<<20); err == nil {
		t.Fatal("a stalled body read without error")
	}
	if body.largest > startBytes {
		t.Errorf("read into a buffer of %d bytes for 100 bytes sent; want at most %d", body.largest, startBytes)
	}
	if got := mem.budget.Used(); got != 0 {
		t.Errorf("%d bytes still taken after the read failed; want 0", got)
	}
}

// TestBufferCountsCapacity: reading 40 KiB takes the capacity of the
// buffers it grows through from the budget, the one being copied from
// included, and holds the final capacity until released.
func TestBufferCountsCapacity(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 40<<10)
	// Growing from 32 KiB to 64 KiB holds both at once.
	for _, c := range []struct {
		limit int64
		ok    bool
	}{{96 << 10, true}, {96<<10 - 1, false}} {
		mem := new(Budget).Round(c.limit)
		got, err := mem.Read(bytes.NewReader(data), -1, 0)
		if c.ok != (err == nil) {
			t.Fatalf("limit %d: err %v; want ok %v", c.limit, err, c.ok)
		}
		if !c.ok {
			if !errors.Is(err, ErrBudget) || mem.budget.Used() != 0 {
				t.Errorf("limit %d: err %v with %d bytes taken; want ErrBudget and 0", c.limit, err, mem.budget.Used())
			}
			continue
		}
		if !bytes.Equal(got, data) || mem.held.Load() != int64(cap(got)) || cap(got) != 64<<10 {
			t.Errorf("read %d bytes in a buffer of %d, holding %d; want 40 KiB in 64 KiB, all held", len(got), cap(got), mem.held.Load())
		}
		mem.Release()
		if mem.budget.Used() != 0 {
			t.Errorf("%d bytes taken after release", mem.budget.Used())
		}
	}
}

// TestRoundsShareTheBudget: what one round holds is missing from every
// other round's limit until it is released.
func TestRoundsShareTheBudget(t *testing.T) {
	var b Budget
	data := bytes.Repeat([]byte("x"), 3<<10)
	first, second := b.Round(13<<10), b.Round(13<<10)
	if _, err := first.Read(bytes.NewReader(data), int64(len(data)), 0); err != nil {
		t.Fatal(err)
	}
	held := b.Used()
	if _, err := second.Read(bytes.NewReader(bytes.Repeat(data, 2)), -1, 0); !errors.Is(err, ErrBudget) {
		t.Errorf("second round read 6 KiB with %d bytes held by the first: err %v; want ErrBudget", held, err)
	}
	if b.Used() != held {
		t.Errorf("%d bytes used after the refused read; want the first round's %d", b.Used(), held)
	}
	first.Release()
	if _, err := second.Read(bytes.NewReader(bytes.Repeat(data, 2)), -1, 0); err != nil {
		t.Errorf("second round after the first released: %v", err)
	}
	second.Release()
	if b.Used() != 0 {
		t.Errorf("%d bytes used after both released", b.Used())
	}
}

// TestBudgetIsLocal: a body past the budget is probegate's limit, and
// whoever judges failures (a fan-out answer, a probe) knows it so.
func TestBudgetIsLocal(t *testing.T) {
	if _, local := health.LocalCause(fmt.Errorf("reading the answer: %w", ErrBudget)); !local {
		t.Error("ErrBudget is not a local fault")
	}
	if _, local := health.LocalCause(ErrTooLarge); local {
		t.Error("ErrTooLarge, the backend's answer, is a local fault")
	}
}
