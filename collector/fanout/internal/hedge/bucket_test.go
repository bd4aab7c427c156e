package hedge

import (
	"math"
	"sync"
	"testing"
)

// TestBucketWhenEveryReplicaIsSlow plays rounds in which every replica of
// every group is slow, so that every group wants a hedge every round: the
// hedges sent stay within max_percent of the backend requests (hedges
// included) at every moment, and the bucket lets nearly that many go.
func TestBucketWhenEveryReplicaIsSlow(t *testing.T) {
	for _, c := range []struct {
		maxPercent float64
		groups     int
		rounds     int
	}{
		{10, 4, 1000},
		{10, 1, 1000},
		{5, 8, 500},
		{1, 4, 5000},
		{0.5, 2, 10000},
		{33.3, 3, 1000},
		{50, 4, 1000},
		{100, 4, 1000},
		{0, 4, 1000},
	} {
		b := NewBucket(c.maxPercent)
		requests, hedges, refused := 0, 0, 0
		for range c.rounds {
			for range c.groups {
				b.Request()
				requests++
			}
			for range c.groups {
				if !b.Spend() {
					refused++
					continue
				}
				b.Request()
				requests++
				hedges++
				if float64(hedges) > c.maxPercent/100*float64(requests)+1e-9 {
					t.Fatalf("max_percent %v: %d hedges of %d requests", c.maxPercent, hedges, requests)
				}
			}
		}
		// The bucket starts empty and never fills while hedges are wanted
		// (every token is spent at once), so it lets through all it earned
		// but the part of a token left at the end, or every hedge wanted.
		earned := c.maxPercent / 100 * float64(requests)
		if want := min(float64(c.rounds*c.groups), math.Floor(earned)-1); float64(hedges) < want {
			t.Errorf("max_percent %v: only %d hedges of %d requests, which earned %.1f", c.maxPercent, hedges, requests, earned)
		}
		if c.maxPercent < 100 && refused == 0 {
			t.Errorf("max_percent %v: no hedge refused although every group wanted one every round", c.maxPercent)
		}
	}
}

func TestBucketCapacity(t *testing.T) {
	b := NewBucket(50)
	for range 1000 {
		b.Request()
	}
	if got := b.Tokens(); got != Capacity {
		t.Fatalf("after 1000 requests at 50%%: %v tokens, want the capacity %d", got, Capacity)
	}
	for i := range Capacity {
		if !b.Spend() {
			t.Fatalf("hedge %d of a full bucket refused", i+1)
		}
	}
	if b.Spend() {
		t.Fatal("a hedge beyond the capacity went out")
	}
}

func TestNewBucketPercentages(t *testing.T) {
	for _, c := range []struct {
		maxPercent float64
		requests   int
		want       float64
	}{
		{10, 10, 1},
		{10, 9, 0.9},
		{0.01, 10000, 1},
		{100, 3, 3},
		{250, 3, 3},
		{-5, 100, 0},
		{math.NaN(), 100, 0},
		{math.Inf(1), 2, 2},
	} {
		b := NewBucket(c.maxPercent)
		for range c.requests {
			b.Request()
		}
		if got := b.Tokens(); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("max_percent %v, %d requests: %v tokens, want %v", c.maxPercent, c.requests, got, c.want)
		}
	}
	if (&Bucket{}).Spend() {
		t.Error("the zero Bucket let a hedge go")
	}
}

// TestBucketConcurrent earns and spends from several goroutines at once,
// as the rounds in flight do: no token is spent twice.
func TestBucketConcurrent(t *testing.T) {
	b := NewBucket(10)
	const workers, requests = 4, 10000
	var spent sync.Map
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			n := 0
			for range requests {
				b.Request()
				if b.Spend() {
					n++
				}
			}
			spent.Store(w, n)
		})
	}
	wg.Wait()
	total := 0
	spent.Range(func(_, n any) bool { total += n.(int); return true })
	if want := workers * requests / 10; total+int(b.Tokens()+1e-9) != want {
		t.Errorf("%d hedges and %v tokens left of %d earned", total, b.Tokens(), want)
	}
}
