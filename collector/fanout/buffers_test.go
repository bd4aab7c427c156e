package fanout

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
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
	mem := &roundBuffers{budget: &bufferBudget{}, limit: 1 << 30}
	body := &stallingReader{data: bytes.Repeat([]byte("x"), 100)}
	if _, err := readLimited(body, 60<<20, 64<<20, mem); err == nil {
		t.Fatal("a stalled body read without error")
	}
	if body.largest > startBufferBytes {
		t.Errorf("read into a buffer of %d bytes for 100 bytes sent; want at most %d", body.largest, startBufferBytes)
	}
	if got := mem.budget.used.Load(); got != 0 {
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
		mem := &roundBuffers{budget: &bufferBudget{}, limit: c.limit}
		got, err := readLimited(bytes.NewReader(data), -1, 0, mem)
		if c.ok != (err == nil) {
			t.Fatalf("limit %d: err %v; want ok %v", c.limit, err, c.ok)
		}
		if !c.ok {
			if !errors.Is(err, errBufferBudget) || mem.budget.used.Load() != 0 {
				t.Errorf("limit %d: err %v with %d bytes taken; want errBufferBudget and 0", c.limit, err, mem.budget.used.Load())
			}
			continue
		}
		if !bytes.Equal(got, data) || mem.held.Load() != int64(cap(got)) || cap(got) != 64<<10 {
			t.Errorf("read %d bytes in a buffer of %d, holding %d; want 40 KiB in 64 KiB, all held", len(got), cap(got), mem.held.Load())
		}
		mem.release()
		if mem.budget.used.Load() != 0 {
			t.Errorf("%d bytes taken after release", mem.budget.used.Load())
		}
	}
}

// TestAnswerPastTheBufferBudgetIsLocal: an answer that would pass
// fanout.max_buffered_bytes does not contribute, is counted local (no
// fault of the backend's), and the round gives everything back.
func TestAnswerPastTheBufferBudgetIsLocal(t *testing.T) {
	big := "[" + strings.Repeat(`"x",`, 10<<10) + `"x"]`
	rig := setup(t, options{fanout: config.Fanout{MaxBufferedBytes: 32 << 10}},
		serve(t, answer(200, `[0]`)), serve(t, answer(200, big)))
	expect(t, rig.do("GET", "/fanout/q", "", nil), 200, "1/2", `[0]`)
	if got := rig.errors(1, pool.FanoutLocal); got != 1 {
		t.Errorf("local errors of b1 %d; want 1", got)
	}
	if got := rig.fanout.buffers.used.Load(); got != 0 {
		t.Errorf("%d bytes still taken after the round", got)
	}
	// The same answer fits a larger budget.
	rig = setup(t, options{fanout: config.Fanout{MaxBufferedBytes: 1 << 20}},
		serve(t, answer(200, `[0]`)), serve(t, answer(200, big)))
	if rec := rig.do("GET", "/fanout/q", "", nil); rec.Header().Get("X-Backends") != "2/2" {
		t.Errorf("X-Backends %q under a 1 MiB budget; want 2/2", rec.Header().Get("X-Backends"))
	}
}

// TestPostBodyTakesFromTheBudget: a request body that does not fit the
// budget is a local 503, and no backend is asked.
func TestPostBodyTakesFromTheBudget(t *testing.T) {
	b := serve(t, answer(200, `[0]`))
	rig := setup(t, options{fanout: config.Fanout{MaxBufferedBytes: 8 << 10}}, b)
	rec := rig.do("POST", "/fanout/q", strings.Repeat("x", 20<<10), nil)
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || b.hits.Load() != 0 {
		t.Errorf("status %d, Retry-After %q, backend hits %d; want 503, 1 and 0", rec.Code, rec.Header().Get("Retry-After"), b.hits.Load())
	}
}
