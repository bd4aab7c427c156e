package fleet

import (
	"fmt"
	"testing"
	"time"
)

func TestNextWrite(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		name      string
		pending   int
		last      time.Time
		lastBytes int
		now       time.Time
		want      time.Time
		wantOK    bool
	}{
		{"nothing pending: no write", 0, at(0), 100, at(1000), time.Time{}, false},
		{"nothing written yet: at once", 5, time.Time{}, 0, at(10), at(10), true},
		{"long after the last: at once", 5, at(0), 100, at(1000), at(1000), true},
		{"soon after the last: a quarter second after it", 5, at(0), 100, at(100), at(250), true},
		{"exactly then", 1, at(0), 100, at(250), at(250), true},
		{"after a full write: as long as a megabyte a second takes", 1, at(0), MaxWriteBytes, at(10), at(500), true},
		{"a clock gone back waits from the last", 1, at(1000), 100, at(0), at(1250), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := NextWrite(c.pending, c.last, c.lastBytes, c.now)
			if !got.Equal(c.want) || ok != c.wantOK {
				t.Errorf("NextWrite = %v, %v; want %v, %v", got.Sub(at(0))/ms, ok, c.want.Sub(at(0))/ms, c.wantOK)
			}
		})
	}
}

// publication is a replica publishing as its caller will: changes come in,
// each a put of a backend's latest verdict; when NextWrite allows, it
// writes what waits, the first of Split's writes at once and the rest
// each when NextWrite allows again.
type publication struct {
	pending map[string]Op
	order   []string
	last    time.Time
	bytes   int
	// writes are the writes made: when, and their sizes and counts.
	writes []write
}

type write struct {
	at         time.Time
	bytes, ops int
}

func (p *publication) change(o Op) {
	if _, ok := p.pending[o.Key]; !ok {
		p.order = append(p.order, o.Key)
	}
	p.pending[o.Key] = o
}

// flush writes one write of what waits if NextWrite allows it by now.
func (p *publication) flush(now time.Time) error {
	next, ok := NextWrite(len(p.pending), p.last, p.bytes, now)
	if !ok || next.After(now) {
		return nil
	}
	ops := make([]Op, len(p.order))
	for i, key := range p.order {
		ops[i] = p.pending[key]
	}
	writes, err := Split(ops, WriteLimits())
	if err != nil {
		return err
	}
	w := write{at: now, ops: len(writes[0])}
	for _, o := range writes[0] {
		w.bytes += o.Size()
		delete(p.pending, o.Key)
	}
	p.order = p.order[len(writes[0]):]
	p.writes = append(p.writes, w)
	p.last, p.bytes = now, w.bytes
	return nil
}

// busiestSecond is the most bytes and writes of any one second of writes.
func busiestSecond(writes []write) (bytes, count int) {
	for i := range writes {
		b, n := 0, 0
		for _, w := range writes[i:] {
			if w.at.Sub(writes[i].at) >= time.Second {
				break
			}
			b, n = b+w.bytes, n+1
		}
		bytes, count = max(bytes, b), max(count, n)
	}
	return bytes, count
}

// representativePut is the put of one verdict as a replica of a
// Kubernetes Deployment writes it: a pod's name, a backend named as a
// Prometheus shard's replica is, and a failed result, the longest
// common verdict.
func representativePut(backend int) Op {
	v := representativeVerdict()
	v.Since = at(int64(backend))
	value, err := Encode(v)
	if err != nil {
		panic(err)
	}
	return Op{Key: fmt.Sprintf("/probegate/default/verdicts/probegate-6d8f9c7b54-x7k2p/prometheus-shard-%04d-b", backend), Value: value}
}

// simulatePublication runs a replica of backends backends of which
// perSecond change state every second, for seconds seconds, every change
// at its own time and a flush every 10ms, and returns its writes.
func simulatePublication(backends, perSecond, seconds int) ([]write, error) {
	p := &publication{pending: make(map[string]Op)}
	step := 10 * time.Millisecond
	changed := 0
	for now := at(0); now.Before(at(int64(seconds) * 1000)); now = now.Add(step) {
		for due := int(now.Sub(at(0))/step+1) * perSecond / 100; changed < due; changed++ {
			p.change(representativePut(changed % backends))
		}
		if err := p.flush(now); err != nil {
			return nil, err
		}
	}
	return p.writes, nil
}

// TestPublicationVolume holds the bound of the contract: 10,000 backends
// of which 1% change state a second are published in at most
// MaxWritesPerSecond writes and MaxBytesPerSecond a second, and so is a
// republication of every one at once (a replica's new lease).
func TestPublicationVolume(t *testing.T) {
	writes, err := simulatePublication(10000, 100, 20)
	if err != nil {
		t.Fatal(err)
	}
	bytes, count := busiestSecond(writes)
	t.Logf("10,000 backends, 1%% changing a second: %d bytes a put, the busiest second %d bytes in %d writes", representativePut(42).Size(), bytes, count)
	if bytes > MaxBytesPerSecond || count > MaxWritesPerSecond {
		t.Errorf("the busiest second wrote %d bytes in %d writes; the bounds are %d and %d", bytes, count, MaxBytesPerSecond, MaxWritesPerSecond)
	}
	written := 0
	for _, w := range writes {
		written += w.ops
	}
	if written < 100*19 {
		t.Errorf("%d changes written in 20s of 100 a second: the publication falls behind", written)
	}

	p := &publication{pending: make(map[string]Op)}
	for b := range 10000 {
		p.change(representativePut(b))
	}
	for now := at(0); len(p.pending) > 0 && now.Before(at(60_000)); now = now.Add(10 * time.Millisecond) {
		if err := p.flush(now); err != nil {
			t.Fatal(err)
		}
	}
	bytes, count = busiestSecond(p.writes)
	last := p.writes[len(p.writes)-1].at.Sub(at(0))
	t.Logf("10,000 backends at once: %d writes over %v, the busiest second %d bytes in %d writes", len(p.writes), last, bytes, count)
	if len(p.pending) > 0 || bytes > MaxBytesPerSecond || count > MaxWritesPerSecond {
		t.Errorf("%d left unwritten; the busiest second wrote %d bytes in %d writes", len(p.pending), bytes, count)
	}
}
